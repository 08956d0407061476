import BacklotBasics

extension SourceSelection {
    /// The variants the selected files come in, from their pack paths' markers (those a manifest's
    /// `variants` gave them and Play's `#tcf_`/`#tier_` folders selected as they are), checked so
    /// that whatever a device chooses installs as one tree.
    /// - Throws: ``BacklotError/Code/invalidSource`` naming the file for a marker that names no
    ///   value, two markers, or two files that one device would install at one path (or a file
    ///   where the other needs a folder); ``BacklotError/Code/invalidManifest`` for texture formats
    ///   without a default.
    static func variants(of files: [File], manifest: PackManifest) throws -> PackVariants? {
        var formats = Set<String>()
        var tiers = Set<Int>()
        // Installed path → the files there, by their marker (nil: shared).
        var installed: [BytePath.Key: [(file: File, marker: VariantMarker?)]] = [:]
        var marked = false
        for file in files {
            let marker: VariantMarker?
            do {
                marker = try VariantMarker.find(in: file.packPath)
            } catch let e as BacklotError {
                throw BacklotError(.invalidSource, e.message, context: file.sourcePath, hint: e.hint)
            }
            switch marker?.dimension {
            case .textureFormat?: formats.insert(marker!.value)
            case .deviceTier?: tiers.insert(DeviceTier.value(of: marker!.value)!)
            case nil: break
            }
            marked = marked || marker != nil
            installed[BytePath.Key(marker?.installedPath ?? file.packPath), default: []].append((file, marker))
        }
        guard marked else { return nil }
        // Two files clash when one device can get both: unless they are of one dimension's two values.
        func clash(_ a: VariantMarker?, _ b: VariantMarker?) -> Bool {
            guard let a, let b, a.dimension == b.dimension else { return true }
            return a.value == b.value
        }
        func describe(_ entry: (file: File, marker: VariantMarker?)) -> String {
            "\"\(entry.file.packPath)\" (\(entry.file.sourcePath))"
        }
        for key in installed.keys.sorted() {
            let entries = installed[key]!
            for (i, a) in entries.enumerated() {
                if let b = entries[(i + 1)...].first(where: { clash(a.marker, $0.marker) }) {
                    throw BacklotError(
                        .invalidSource,
                        "\(describe(a)) and \(describe(b)) would both install at \"\(key.path)\" on one device",
                        context: manifest.assetPackID.rawValue,
                        hint:
                            "a variant's file replaces no shared file: move the shared one into every variant, or give it another path"
                    )
                }
                for folder in BytePath.ancestors(of: key.path) {
                    if let b = installed[BytePath.Key(folder)]?.first(where: { clash(a.marker, $0.marker) }) {
                        throw BacklotError(
                            .invalidSource,
                            "\(describe(b)) installs as a file at \"\(folder)\", where \(describe(a)) needs a folder",
                            context: manifest.assetPackID.rawValue, hint: "give one of them another path")
                    }
                }
            }
        }
        do {
            return try PackVariants(
                textureFormats: Array(formats), defaultTextureFormat: manifest.defaultTextureFormat,
                deviceTiers: Array(tiers))
        } catch let e as BacklotError {
            throw BacklotError(.invalidManifest, e.message, context: manifest.assetPackID.rawValue, hint: e.hint)
        }
    }
}
