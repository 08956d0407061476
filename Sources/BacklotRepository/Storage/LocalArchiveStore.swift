import BacklotBasics
import BacklotCrypto

#if canImport(Glibc)
import Glibc
#endif

/// Archives in the data folder (``ArchiveStore``), the default: uploads in progress in
/// `DIR/uploads/ID.part` (0600, one writer at a time by `flock`), blobs in `DIR/blobs/SHA.pack`
/// (0644: they are hard-linked into the published tree, which must be world-readable).
///
/// ```swift
/// let store = try LocalArchiveStore(directory: try RepositoryDirectory(path: "data"))
/// ```
public struct LocalArchiveStore: ArchiveStore {
    public let uploadsPath: String
    public let blobsPath: String

    /// Creates `DIR/uploads` (0700) and `DIR/blobs` (0755) when missing.
    /// - Throws: ``BacklotError/Code/io`` when they cannot be made.
    public init(directory: RepositoryDirectory) throws {
        uploadsPath = directory.path + "/uploads"
        blobsPath = directory.path + "/blobs"
        try FileSystem.makeDirectory(uploadsPath, mode: 0o700)
        try FileSystem.makeDirectory(blobsPath, mode: 0o755)
    }

    public var location: String { blobsPath }
    public var isShared: Bool { false }

    func uploadPath(_ versionID: Int64) -> String { uploadsPath + "/\(versionID).part" }
    func blobPath(_ sha: String) -> String { blobsPath + "/\(sha).pack" }

    public func receivedBytes(_ upload: UploadRecord) -> UInt64 {
        (try? FileSystem.status(uploadPath(upload.versionID)))??.size ?? 0
    }

    public func openUpload(
        _ upload: UploadRecord, record: @escaping (UInt64, String?) throws -> Void
    ) throws -> any UploadSink {
        try LocalUploadSink(path: uploadPath(upload.versionID), label: upload.label)
    }

    public func readUpload(_ upload: UploadRecord) throws -> (any ArchiveReader)? {
        let path = uploadPath(upload.versionID)
        return FileSystem.exists(path) ? try FileArchiveReader(path: path) : nil
    }

    public func removeUpload(_ upload: UploadRecord) throws {
        unlink(uploadPath(upload.versionID))
    }

    public func storeBlob(from upload: UploadRecord, sha: SHA256Digest) throws {
        let path = uploadPath(upload.versionID)
        let blob = blobPath(sha.hex)
        guard FileSystem.exists(path) else { return }  // stored already (a crash after the rename)
        if FileSystem.exists(blob) {
            unlink(path)
            return
        }
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        if fd >= 0 {
            fchmod(fd, 0o644)
            fsync(fd)
            close(fd)
        }
        try SystemCall.retrying("rename", path: blob) { rename(path, blob) }
        FileSystem.syncDirectory(blobsPath)
    }

    public func readBlob(_ sha: String) throws -> (any ArchiveReader)? {
        let path = blobPath(sha)
        return FileSystem.exists(path) ? try FileArchiveReader(path: path) : nil
    }

    public func publishBlob(_ sha: String, to tree: any PublishedTreeStore, at relative: String, replacing: Bool) throws
    {
        try tree.copyFile(from: blobPath(sha), to: relative, replacing: replacing)
    }

    public func blobNames() throws -> [String] {
        try FileSystem.entryNames(blobsPath).map { String(decoding: $0, as: UTF8.self) }
            .filter { $0.hasSuffix(".pack") }.map { String($0.dropLast(5)) }
    }

    public func removeBlob(_ sha: String) throws {
        let path = blobPath(sha)
        guard unlink(path) == 0 || errno == ENOENT else { throw SystemCall.error("remove", path: path) }
    }
}
