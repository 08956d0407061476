import BacklotBasics
import BacklotCrypto
import BacklotS3

/// Archives in a bucket of an S3-compatible object store (``ArchiveStore``), shared by every
/// server on the same metadata, under the tree's key prefix but outside its `v1/` (which is the
/// only part a bucket policy should make public):
///
/// ```
/// PREFIX/uploads/ID               a complete upload, awaiting processing (a multipart upload until then)
/// PREFIX/uploads/ID.tail-OFFSET   bytes from OFFSET that did not fill a part when a request ended
/// PREFIX/blobs/SHA.pack           a verified archive
/// ```
///
/// An upload streams into a multipart upload, one part in memory at a time (``S3UploadSink``);
/// processing reads it back by ranges (``S3ArchiveReader``); storing it as a blob and publishing a
/// blob into the tree are copies inside the object store (no byte passes through the server).
///
/// ```swift
/// let store = try S3ArchiveStore(client: s3, bucket: "backlot", prefix: "content")
/// ```
public struct S3ArchiveStore: ArchiveStore {
    public let client: S3Client
    public let bucket: String
    /// The key prefix, without slashes at either end ("" for the bucket's root).
    public let prefix: String
    /// The smallest part of an upload (S3 takes 5 MiB to 5 GiB); raised for archives that would take over 10,000 parts.
    public let partSize: UInt64
    /// What the uploads into the bucket hold in memory at once (a part each, taken when an upload's
    /// request starts and given back when it ends).
    public let uploadMemory: UploadMemoryBudget
    /// 512 MiB: 64 uploads at once at the default part size.
    public static let defaultUploadMemory: UInt64 = 512 << 20

    /// - Throws: ``BacklotError/Code/invalidInput`` for a part size outside 5 MiB…5 GiB.
    public init(
        client: S3Client, bucket: String, prefix: String = "", partSize: UInt64 = 8 << 20,
        uploadMemory: UInt64 = S3ArchiveStore.defaultUploadMemory
    ) throws {
        guard (S3Client.minimumPartSize...S3Client.maximumPartSize).contains(partSize) else {
            throw BacklotError(
                .invalidInput, "a part size of \(partSize) bytes is outside 5 MiB…5 GiB", context: "s3://\(bucket)")
        }
        self.client = client
        self.bucket = bucket
        self.prefix = String(prefix.drop(while: { $0 == "/" }).reversed().drop(while: { $0 == "/" }).reversed())
        self.partSize = partSize
        self.uploadMemory = UploadMemoryBudget(limit: uploadMemory)
    }

    /// The same bucket and prefix as a published tree in a bucket.
    public init(
        beside tree: S3PublishedTree, partSize: UInt64 = 8 << 20,
        uploadMemory: UInt64 = S3ArchiveStore.defaultUploadMemory
    ) throws {
        try self.init(
            client: tree.client, bucket: tree.bucket, prefix: tree.prefix, partSize: partSize,
            uploadMemory: uploadMemory)
    }

    public var location: String {
        "s3://\(bucket)\(prefix.isEmpty ? "" : "/" + prefix) at \(client.configuration.endpoint)"
    }
    public var isShared: Bool { true }

    func key(_ name: String) -> String { prefix.isEmpty ? name : prefix + "/" + name }
    func uploadKey(_ versionID: Int64) -> String { key("uploads/\(versionID)") }
    func tailPrefix(_ versionID: Int64) -> String { key("uploads/\(versionID).tail-") }
    func blobKey(_ sha: String) -> String { key("blobs/\(sha).pack") }

    /// The part size of an upload of `declared` bytes: ``partSize``, doubled until 10,000 parts hold it.
    func partSize(for declared: UInt64) -> UInt64 {
        var part = partSize
        while (declared + part - 1) / part > UInt64(S3Client.maximumPartCount) { part *= 2 }
        return part
    }

    public func receivedBytes(_ upload: UploadRecord) -> UInt64 { upload.recorded }

    public func openUpload(
        _ upload: UploadRecord, record: @escaping (UInt64, String?) throws -> Void
    ) throws -> any UploadSink {
        try S3UploadSink(store: self, upload: upload, record: record)
    }

    public func readUpload(_ upload: UploadRecord) throws -> (any ArchiveReader)? {
        do {
            return try S3ArchiveReader(client: client, bucket: bucket, key: uploadKey(upload.versionID))
        } catch let e as BacklotError where e.code == .notFound {
            return nil
        }
    }

    public func removeUpload(_ upload: UploadRecord) throws {
        if let id = upload.multipartID {
            do {
                try client.abortMultipartUpload(bucket: bucket, key: uploadKey(upload.versionID), uploadID: id)
            } catch let e as BacklotError where e.code == .notFound {}
        }
        try client.deleteObject(bucket: bucket, key: uploadKey(upload.versionID))
        for tail in try client.listAllObjects(bucket: bucket, prefix: tailPrefix(upload.versionID), limit: 10_000) {
            try client.deleteObject(bucket: bucket, key: tail.key)
        }
    }

    public func storeBlob(from upload: UploadRecord, sha: SHA256Digest) throws {
        let source = uploadKey(upload.versionID)
        guard let info = try client.headObject(bucket: bucket, key: source) else { return }  // stored already
        if try client.headObject(bucket: bucket, key: blobKey(sha.hex)) == nil {
            try client.copyObject(
                bucket: bucket, key: source, toBucket: bucket, key: blobKey(sha.hex), size: info.size,
                contentType: "application/octet-stream")
        }
        try client.deleteObject(bucket: bucket, key: source)
    }

    public func readBlob(_ sha: String) throws -> (any ArchiveReader)? {
        do {
            return try S3ArchiveReader(client: client, bucket: bucket, key: blobKey(sha))
        } catch let e as BacklotError where e.code == .notFound {
            return nil
        }
    }

    public func publishBlob(_ sha: String, to tree: any PublishedTreeStore, at relative: String, replacing: Bool) throws
    {
        guard let bucketTree = tree as? S3PublishedTree else {
            throw BacklotError(
                .invalidInput, "archives in \(location) can be published only into a bucket, not \(tree.location)",
                hint: "give the tree and the archives the same --storage")
        }
        let destination = try bucketTree.key(relative)
        if !replacing, try bucketTree.client.headObject(bucket: bucketTree.bucket, key: destination) != nil { return }
        try client.copyObject(
            bucket: bucket, key: blobKey(sha), toBucket: bucketTree.bucket, key: destination,
            contentType: PublishedTreeHeaders.contentType(relative),
            cacheControl: bucketTree.headers.cacheControl(relative))
    }

    public func blobNames() throws -> [String] {
        let folder = key("blobs/")
        return try client.listAllObjects(bucket: bucket, prefix: folder).compactMap { entry in
            let name = entry.key.dropFirst(folder.count)
            return name.hasSuffix(".pack") && !name.contains("/") ? String(name.dropLast(5)) : nil
        }
    }

    public func removeBlob(_ sha: String) throws {
        try client.deleteObject(bucket: bucket, key: blobKey(sha))
    }
}
