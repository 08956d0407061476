import BacklotBasics

extension PackIndex {
    /// The index as a device with `choice` installs it: the shared files and those of the chosen
    /// value in each dimension, each under its path with the variant marker removed
    /// (`docs/format.md` §3.2), sorted by path bytes; the chunk table unchanged, so chunk numbers
    /// stay the pack's. A pack without variants is returned as it is.
    /// - Throws: ``BacklotError/Code/corruptArchive`` when a path's marker names a value the
    ///   metadata does not list, or when the chosen files would not make a tree (two of them at one
    ///   path, or a file where another needs a folder): `package` never writes such a pack.
    ///
    /// ```swift
    /// let choice = index.metadata.variants?.choice(for: profile) ?? VariantChoice()
    /// for file in try index.selecting(choice, source: url).files { print(file.path) }
    /// ```
    public func selecting(_ choice: VariantChoice, source: String) throws -> PackIndex {
        guard let variants = metadata.variants else { return self }
        var selected: [File] = []
        for file in files {
            let marker = try listedMarker(of: file, in: variants, source: source)
            guard choice.includes(marker) else { continue }
            guard let marker else {
                selected.append(file)
                continue
            }
            selected.append(
                File(
                    path: marker.installedPath, mode: file.mode, size: file.size, digest: file.digest,
                    chunks: file.chunks))
        }
        let keys = selected.map { Array($0.path.utf8) }
        let order = selected.indices.sorted { keys[$0].lexicographicallyPrecedes(keys[$1]) }
        if let clash = Self.treeClash(order.map { keys[$0] }) {
            throw BacklotError(
                .corruptArchive,
                "with \(choice), \(clash)", context: source, hint: "the pack is damaged or crafted: package it again")
        }
        return PackIndex(
            metadata: metadata, chunking: chunking, chunks: chunks, files: order.map { selected[$0] },
            dictionary: dictionary)
    }

    /// Why paths sorted by their bytes cannot all be files of one tree (one path twice, or a file
    /// where a later path needs a folder), nil when they can.
    static func treeClash(_ sorted: [[UInt8]]) -> String? {
        var prefixes: [[UInt8]] = []
        // The lengths of `prefixes` (each unique): a folder of the current path ends at one of its slashes.
        var lengths = Set<Int>()
        for (i, path) in sorted.enumerated() {
            if i > 0, sorted[i - 1] == path {
                return "two files install at \"\(String(decoding: path, as: UTF8.self))\""
            }
            while let top = prefixes.last, !path.starts(with: top) {
                prefixes.removeLast()
                lengths.remove(top.count)
            }
            for (offset, byte) in path.enumerated() where byte == BytePath.separator && lengths.contains(offset) {
                return
                    "\"\(String(decoding: path[..<offset], as: UTF8.self))\" is a file, but \"\(String(decoding: path, as: UTF8.self))\" needs it to be a folder"
            }
            prefixes.append(path)
            lengths.insert(path.count)
        }
        return nil
    }

    /// The chunk numbers the files reference.
    public var referencedChunks: Set<Int> {
        var numbers = Set<Int>()
        for file in files { numbers.formUnion(file.chunks) }
        return numbers
    }

    /// What each device the pack's variants could serve installs: one row per choice
    /// (``PackVariants/everyChoice``; one row for a pack without variants), with its files and
    /// bytes, in the order of the choices. Checks first that every choice installs as one tree and
    /// that every marker names a listed value, in time that follows the files, not the choices.
    /// - Throws: ``BacklotError/Code/corruptArchive`` as ``selecting(_:source:)`` does.
    public func installs(source: String) throws -> [(choice: VariantChoice, files: Int, bytes: UInt64)] {
        guard let variants = metadata.variants else { return [(VariantChoice(), files.count, installSize)] }
        var entries: [(installedPath: String, marker: VariantMarker?)] = []
        entries.reserveCapacity(files.count)
        // Files and bytes per variant ("" for the shared ones).
        var totals: [String: (files: Int, bytes: UInt64)] = [:]
        for file in files {
            let marker = try listedMarker(of: file, in: variants, source: source)
            entries.append((marker?.installedPath ?? file.path, marker))
            let key = marker.map { $0.dimension.suffix + $0.value } ?? ""
            let sum = totals[key] ?? (0, 0)
            totals[key] = (sum.files + 1, CheckedInteger.saturatingAdd(sum.bytes, file.size))
        }
        guard entries.contains(where: { $0.marker != nil }) else {
            throw BacklotError(
                .corruptArchive, "the index's metadata lists variants, but no file's path has a variant marker",
                context: source, hint: "the pack is damaged or crafted: package it again")
        }
        if let clash = VariantMarker.treeClash(entries) {
            throw BacklotError(
                .corruptArchive,
                clash.needsFolder
                    ? "\"\(clash.path)\" is a file on some device, but \"\(entries[clash.second].installedPath)\" needs it to be a folder there"
                    : "two files install at \"\(clash.path)\" on some device",
                context: source, hint: "the pack is damaged or crafted: package it again")
        }
        return variants.everyChoice.map { choice in
            var keys = [""]
            if let format = choice.textureFormat { keys.append(VariantDimension.textureFormat.suffix + format) }
            if let tier = choice.deviceTier { keys.append(VariantDimension.deviceTier.suffix + String(tier)) }
            let rows = keys.compactMap { totals[$0] }
            return (
                choice, rows.reduce(0) { $0 + $1.files },
                rows.reduce(UInt64(0)) { CheckedInteger.saturatingAdd($0, $1.bytes) }
            )
        }
    }

    /// The marker of `file`'s path, checked to name a value `variants` lists.
    func listedMarker(of file: File, in variants: PackVariants, source: String) throws -> VariantMarker? {
        let marker: VariantMarker?
        do {
            marker = try VariantMarker.find(in: file.path)
        } catch let e as BacklotError {
            throw BacklotError(.corruptArchive, e.message, context: source, hint: e.hint)
        }
        guard let marker else { return nil }
        let listed =
            switch marker.dimension {
            case .textureFormat: variants.textureFormats.contains(marker.value)
            case .deviceTier: DeviceTier.value(of: marker.value).map(variants.deviceTiers.contains) ?? false
            }
        guard listed else {
            throw BacklotError(
                .corruptArchive,
                "the file \"\(file.path)\" is of the \(marker.dimension.rawValue) \(marker.value), which the index's variants do not list",
                context: source, hint: "the pack is damaged or crafted: package it again")
        }
        return marker
    }
}
