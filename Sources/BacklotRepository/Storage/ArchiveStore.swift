import BacklotBasics
import BacklotCrypto

/// Where a repository keeps archives: uploads in progress, and verified archives ("blobs", named
/// by their SHA-256) that releases publish into the tree. Two implementations: the data folder
/// (``LocalArchiveStore``, the default: `DIR/uploads`, `DIR/blobs`) and a bucket of an
/// S3-compatible object store (``S3ArchiveStore``), which several servers share, so that an
/// upload begun on one is resumed, processed or published by another.
///
/// The repository keeps the metadata (what was received, which multipart upload, who holds the
/// upload); a store only moves bytes. Every blob is stored under the SHA-256 that processing
/// computed and recorded first, so a crash between the two leaves a version processing finishes.
///
/// ```swift
/// let store: any ArchiveStore = LocalArchiveStore(directory: try RepositoryDirectory(path: "data"))
/// let repository = try Repository(directory: directory, archives: store)
/// ```
public protocol ArchiveStore: Sendable {
    /// A human-readable name of where the archives are, for messages.
    var location: String { get }

    /// Whether several servers may share the store (a bucket). Uploads to a shared store are
    /// leased in the metadata; a folder belongs to the one server holding its lock.
    var isShared: Bool { get }

    /// The bytes of an upload stored so far.
    func receivedBytes(_ upload: UploadRecord) -> UInt64

    /// Opens an upload to append to it. `record` is called with the bytes made durable (and the
    /// multipart upload's ID) whenever that changes; it throws to stop the upload (a lost lease).
    /// - Throws: ``BacklotError/Code/conflict`` when another upload to the version is running here.
    func openUpload(_ upload: UploadRecord, record: @escaping (UInt64, String?) throws -> Void) throws -> any UploadSink

    /// The complete upload, for processing; nil when it is not there (stored as a blob already, or removed).
    func readUpload(_ upload: UploadRecord) throws -> (any ArchiveReader)?

    /// Removes an upload and everything it left (parts, tails); nothing happens when it is missing.
    func removeUpload(_ upload: UploadRecord) throws

    /// Makes a verified, complete upload the blob `sha` (kept as it is when that blob exists) and removes the upload.
    func storeBlob(from upload: UploadRecord, sha: SHA256Digest) throws

    /// A blob, or nil when there is none with that SHA-256 (hex).
    func readBlob(_ sha: String) throws -> (any ArchiveReader)?

    /// Makes a blob's bytes the file `relative` of the published tree.
    /// - Parameter replacing: whether an existing file is replaced (else kept: content-addressed packs never change).
    func publishBlob(_ sha: String, to tree: any PublishedTreeStore, at relative: String, replacing: Bool) throws

    /// The SHA-256s (hex) of every blob stored.
    func blobNames() throws -> [String]

    /// Removes a blob; nothing happens when it is missing.
    func removeBlob(_ sha: String) throws
}

/// What the metadata says about an upload, as a store needs it.
public struct UploadRecord: Sendable {
    /// The version's row ID (stable, unique in the repository).
    public let versionID: Int64
    /// The archive's declared size: the upload never goes past it.
    public let declared: UInt64
    /// The bytes the metadata recorded as stored (a shared store's progress).
    public let recorded: UInt64
    /// The multipart upload under way, if one was begun.
    public let multipartID: String?
    /// `app/pack/number`, for messages.
    public let label: String

    public init(versionID: Int64, declared: UInt64, recorded: UInt64 = 0, multipartID: String? = nil, label: String) {
        self.versionID = versionID
        self.declared = declared
        self.recorded = recorded
        self.multipartID = multipartID
        self.label = label
    }
}
