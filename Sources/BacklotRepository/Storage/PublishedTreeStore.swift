import BacklotBasics
import BacklotProtocol

/// Where the published tree (docs/protocol.md §1: key lists, catalogs, packs, Apple manifests and
/// `.aar` files) is written: the data folder's `public/` (``LocalPublishedTree``, the default) or
/// a bucket of an S3-compatible object store (``S3PublishedTree``).
///
/// Paths are relative to the tree's root and start with `v1/` (``PublishedTreePath/validate(_:)``).
/// Every write is atomic per file: a reader sees the old bytes or the new ones, never a mix. The
/// repository writes archives before the catalog that names them, and the catalog last.
///
/// ```swift
/// let tree: any PublishedTreeStore = LocalPublishedTree(directory: try RepositoryDirectory(path: "data"))
/// try tree.write(Array(json.utf8), at: "v1/apps/com.example.game/production/catalog.json")
/// try tree.copyFile(from: "data/blobs/\(sha).pack", to: "v1/packs/\(sha).pack", replacing: false)
/// let packs = try tree.fileNames(in: "v1/packs")
/// ```
public protocol PublishedTreeStore: Sendable {
    /// A human-readable name of where the tree is (a folder, or `s3://bucket/prefix at endpoint`), for messages.
    var location: String { get }

    /// Writes `bytes` as the file at `relative`, replacing it atomically.
    /// - Throws: ``BacklotError/Code/invalidInput`` for a path outside the tree; ``BacklotError/Code/io``
    ///   (folder) or the object store's errors (bucket).
    func write(_ bytes: [UInt8], at relative: String) throws

    /// Makes the bytes of the local file `source` (an archive of the blob store) the file at `relative`.
    /// - Parameter replacing: whether an existing file is replaced (else it is kept as it is: used for
    ///   content-addressed packs, whose bytes never change).
    func copyFile(from source: String, to relative: String, replacing: Bool) throws

    /// The bytes of the file at `relative`, or nil when it is missing.
    /// - Throws: ``BacklotError/Code/quotaExceeded`` when it is larger than `limit`; the storage's errors.
    func read(_ relative: String, atMost limit: UInt64) throws -> [UInt8]?

    /// Removes the file at `relative`; nothing happens when it is missing.
    func remove(_ relative: String) throws

    /// The names of the files directly in folder `relative` (`v1/packs`), hidden names (`.x`) left out, sorted.
    /// An empty list when the folder is missing.
    func fileNames(in relative: String) throws -> [String]

    /// Whether a file is at `relative`, or (for a folder) any file under it.
    func exists(_ relative: String) throws -> Bool

    /// Prepares a folder (a directory of mode 0755 in the local tree; nothing in a bucket, where
    /// folders are only key prefixes).
    func makeFolder(_ relative: String) throws
}

/// Checks of paths relative to the published tree's root.
public enum PublishedTreePath {
    /// Refuses a path that could leave the tree: it must start with `v1`, and have no empty, `.` or
    /// `..` component, no backslash and no NUL.
    /// - Throws: ``BacklotError/Code/invalidInput``.
    public static func validate(_ relative: String) throws {
        let parts = relative.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.first.map(String.init) == PublishedTreeLayout.root,
            !parts.contains(where: { $0.isEmpty || $0 == "." || $0 == ".." }),
            !relative.contains("\\"), !relative.utf8.contains(0)
        else {
            throw BacklotError(
                .invalidInput, "'\(relative)' is not a path of the published tree", context: relative,
                hint: "paths are relative to the tree's root, start with v1/ and have no empty, . or .. component")
        }
    }
}
