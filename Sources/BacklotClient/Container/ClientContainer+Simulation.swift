import BacklotBasics
import BacklotContainer
import Foundation

@_spi(Simulation)
extension ClientContainer {
    /// A new container at `path` (which must not exist) holding what this one holds under another
    /// device identifier: its state copied (``StateStore/copy(to:deviceID:)``) and its installed
    /// files hard-linked, so a thousand devices cost a thousand small databases and no content.
    /// For fleet simulation (`backlot fleet`); an app never needs it.
    /// - Throws: ``BacklotError/Code/alreadyExists`` when `path` exists; ``BacklotError/Code/io``.
    public func clone(to path: String) throws -> ClientContainer {
        let target = ContainerLayout(root: URL(fileURLWithPath: path).standardizedFileURL.path)
        guard (try FileSystem.status(target.root)) == nil else {
            throw BacklotError(.alreadyExists, "\(path) exists already", hint: "clone into a new folder")
        }
        try FileSystem.makeDirectories(target.root)
        try store.copy(to: target, deviceID: UUID().uuidString.lowercased())
        try Self.linkTree(from: layout.packsFolder, to: target.packsFolder)
        return try ClientContainer(path: target.root)
    }

    /// Re-creates the folders of `source` under `target` and hard-links its regular files.
    static func linkTree(from source: String, to target: String) throws {
        try FileSystem.makeDirectories(target)
        for name in try FileManager.default.contentsOfDirectory(atPath: source) {
            let from = source + "/" + name
            let to = target + "/" + name
            switch try FileSystem.linkStatus(from)?.kind {  // a link is never followed (nor copied)
            case .directory?: try linkTree(from: from, to: to)
            case .regular?: try FileSystem.hardLink(from, to: to)
            default: continue
            }
        }
    }
}
