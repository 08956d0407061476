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
        var markers: [VariantMarker?] = []
        markers.reserveCapacity(files.count)
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
            markers.append(marker)
        }
        guard marked else { return nil }
        let entries = files.indices.map {
            (installedPath: markers[$0]?.installedPath ?? files[$0].packPath, marker: markers[$0])
        }
        if let clash = VariantMarker.treeClash(entries) {
            let a = files[clash.first]
            let b = files[clash.second]
            throw BacklotError(
                .invalidSource,
                clash.needsFolder
                    ? "\"\(a.packPath)\" (\(a.sourcePath)) installs as a file at \"\(clash.path)\", where \"\(b.packPath)\" (\(b.sourcePath)) needs a folder"
                    : "\"\(a.packPath)\" (\(a.sourcePath)) and \"\(b.packPath)\" (\(b.sourcePath)) would both install at \"\(clash.path)\" on one device",
                context: manifest.assetPackID.rawValue,
                hint: clash.needsFolder
                    ? "give one of them another path"
                    : "a variant's file replaces no shared file: move the shared one into every variant, or give it another path"
            )
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
