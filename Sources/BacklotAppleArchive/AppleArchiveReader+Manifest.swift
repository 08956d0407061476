import BacklotBasics
import BacklotFormat

extension AppleArchiveReader.Summary {
    /// Checks the archive's entries against the manifest given to `ba-package` with it, its files
    /// being under `Contents/` (``AppleArchiveWriter/contentsFolder``): each `file` (or
    /// `fileDestination`) selector's path is a file entry, each `directory` (or
    /// `directoryDestination`) holds at least one file, each `filePattern` matches one, and no file
    /// matches a `fileExclusion`. Entries no selector names are allowed (the packager may add its
    /// own, such as the root folder and the manifest).
    /// - Throws: ``BacklotError/Code/corruptArchive`` naming the selector and what is missing.
    public func check(against manifest: PackManifest, source: String) throws {
        let prefix = AppleArchiveWriter.contentsFolder + "/"
        let files = filePaths.filter { $0.utf8.starts(with: prefix.utf8) }.map {
            String(decoding: $0.utf8.dropFirst(prefix.utf8.count), as: UTF8.self)
        }
        let set = Set(files.map(BytePath.Key.init))
        func missing(_ index: Int, _ selector: FileSelector, _ what: String) -> BacklotError {
            BacklotError(
                .corruptArchive,
                "the archive does not hold what the manifest selects: fileSelectors[\(index)] (\(selector.keys)) \(what)",
                context: source, hint: "upload the .aar that ba-package made from this manifest, with this manifest")
        }
        for (index, selector) in manifest.fileSelectors.enumerated() {
            switch selector {
            case .file(let path), .fileMapping(_, let path):
                guard set.contains(BytePath.Key(path)) else {
                    throw missing(
                        index, selector, "names \"\(path)\", which is not a file of the archive (Contents/\(path))")
                }
            case .directory(let path), .directoryMapping(_, let path):
                let prefix = path == "." || path.isEmpty ? "" : path + "/"
                guard files.contains(where: { $0.utf8.starts(with: prefix.utf8) }) else {
                    throw missing(index, selector, "names the folder \"\(path)\", which holds no file of the archive")
                }
            case .filePattern(let pattern):
                guard let glob = try? Glob(pattern), files.contains(where: glob.matches) else {
                    throw missing(index, selector, "matches no file of the archive")
                }
            case .fileExclusion(let pattern):
                if let glob = try? Glob(pattern), let file = files.first(where: glob.matches) {
                    throw missing(
                        index, selector, "excludes \"\(TerminalText.escaped(file))\", which the archive holds")
                }
            }
        }
    }
}
