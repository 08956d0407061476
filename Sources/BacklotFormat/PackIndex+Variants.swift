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
            let marker: VariantMarker?
            do {
                marker = try VariantMarker.find(in: file.path)
            } catch let e as BacklotError {
                throw BacklotError(.corruptArchive, e.message, context: source, hint: e.hint)
            }
            if let marker {
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
            }
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
        for (i, path) in sorted.enumerated() {
            if i > 0, sorted[i - 1] == path {
                return "two files install at \"\(String(decoding: path, as: UTF8.self))\""
            }
            while let top = prefixes.last, !path.starts(with: top) { prefixes.removeLast() }
            if let folder = prefixes.first(where: { path[$0.count] == BytePath.separator }) {
                return
                    "\"\(String(decoding: folder, as: UTF8.self))\" is a file, but \"\(String(decoding: path, as: UTF8.self))\" needs it to be a folder"
            }
            prefixes.append(path)
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
    /// bytes, in the order of the choices.
    /// - Throws: what ``selecting(_:source:)`` throws.
    public func installs(source: String) throws -> [(choice: VariantChoice, files: Int, bytes: UInt64)] {
        guard let variants = metadata.variants else { return [(VariantChoice(), files.count, installSize)] }
        return try variants.everyChoice.map {
            let selected = try selecting($0, source: source)
            return ($0, selected.files.count, selected.installSize)
        }
    }
}
