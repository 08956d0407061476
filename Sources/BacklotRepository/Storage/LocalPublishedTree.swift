import BacklotBasics
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The published tree in the data folder (`DIR/public`), as `backlot serve` has always written it:
/// folders 0755 and files 0644 whatever the umask, each file written in `DIR/staging` and renamed
/// into place (``RepositoryDirectory/writeIntoTree(_:to:)``), archives hard-linked from the blob
/// store (``RepositoryDirectory/linkIntoTree(from:to:replacing:)``).
///
/// ```swift
/// let tree = LocalPublishedTree(directory: try RepositoryDirectory(path: "data"))
/// try tree.write(signed, at: "v1/keys/root.json")
/// ```
public struct LocalPublishedTree: PublishedTreeStore {
    public let directory: RepositoryDirectory

    public init(directory: RepositoryDirectory) {
        self.directory = directory
    }

    public var location: String { directory.publicTreePath }

    /// The absolute path of a file of the tree.
    /// - Throws: ``BacklotError/Code/invalidInput`` for a path outside the tree.
    public func path(_ relative: String) throws -> String {
        try PublishedTreePath.validate(relative)
        return directory.publicTreePath + "/" + relative
    }

    public func write(_ bytes: [UInt8], at relative: String) throws {
        let destination = try path(relative)
        try directory.makeTreeDirectory(Self.parent(of: destination))
        try directory.writeIntoTree(bytes, to: destination)
    }

    public func copyFile(from source: String, to relative: String, replacing: Bool) throws {
        let destination = try path(relative)
        try directory.makeTreeDirectory(Self.parent(of: destination))
        try directory.linkIntoTree(from: source, to: destination, replacing: replacing)
    }

    public func read(_ relative: String, atMost limit: UInt64) throws -> [UInt8]? {
        let file = try path(relative)
        guard FileSystem.exists(file) else { return nil }
        return try FileDescriptor.readWholeFile(
            file, atMost: limit, what: "the file \(relative) of the published tree", code: .quotaExceeded)
    }

    public func remove(_ relative: String) throws {
        let target = try path(relative)
        guard unlink(target) == 0 || errno == ENOENT else { throw SystemCall.error("remove", path: target) }
    }

    public func fileNames(in relative: String) throws -> [String] {
        let folder = try path(relative)
        guard FileSystem.exists(folder) else { return [] }
        return try FileSystem.entryNames(folder).map { String(decoding: $0, as: UTF8.self) }
            .filter { name in
                !name.hasPrefix(".") && (try? FileSystem.linkStatus(folder + "/" + name))??.kind == .regular
            }
            .sorted()
    }

    public func exists(_ relative: String) throws -> Bool {
        FileSystem.exists(try path(relative))
    }

    public func makeFolder(_ relative: String) throws {
        try directory.makeTreeDirectory(try path(relative))
    }

    static func parent(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return path }
        return String(path[..<slash])
    }
}
