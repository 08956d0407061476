import BacklotBasics
import BacklotS3

/// The published tree in a bucket of an S3-compatible object store, under an optional key prefix
/// (`s3://BUCKET/PREFIX` holds `PREFIX/v1/keys/root.json` …), so that nginx or a CDN in front of
/// the bucket serves exactly what `backlot serve` serves from its folder.
///
/// Every object is written with the `Content-Type` and `Cache-Control` of ``PublishedTreeHeaders``
/// (docs/protocol.md §1). An S3 PUT is atomic per object, so a reader sees a whole old catalog or a
/// whole new one; the repository writes archives before the catalog that names them.
///
/// ```swift
/// let s3 = S3Client(configuration: try S3Configuration(endpoint: "https://s3.example.net"),
///                   credentials: try S3Credentials.fromEnvironment())
/// let tree = try S3PublishedTree(client: s3, bucket: "backlot", prefix: "public")
/// try tree.write(signed, at: "v1/apps/com.example.game/production/catalog.json")
/// ```
public struct S3PublishedTree: PublishedTreeStore {
    public let client: S3Client
    public let bucket: String
    /// The key prefix, without slashes at either end ("" for the bucket's root).
    public let prefix: String
    public let headers: PublishedTreeHeaders
    /// Bytes per part when an archive is larger than one part (a multipart upload streamed from the file).
    public let partSize: UInt64

    /// - Parameters:
    ///   - prefix: keys are `PREFIX/v1/…`; slashes at either end are ignored.
    ///   - headers: the max-ages the objects' `Cache-Control` carries.
    /// - Throws: ``BacklotError/Code/invalidInput`` for a prefix with an empty, `.` or `..` component.
    public init(
        client: S3Client, bucket: String, prefix: String = "", headers: PublishedTreeHeaders = PublishedTreeHeaders(),
        partSize: UInt64 = 16 << 20
    ) throws {
        let trimmed = String(prefix.drop(while: { $0 == "/" }).reversed().drop(while: { $0 == "/" }).reversed())
        if !trimmed.isEmpty,
            trimmed.split(separator: "/", omittingEmptySubsequences: false).contains(where: {
                $0.isEmpty || $0 == "." || $0 == ".."
            })
        {
            throw BacklotError(
                .invalidInput, "the key prefix '\(prefix)' has an empty, . or .. component",
                context: "s3://\(bucket)/\(prefix)")
        }
        self.client = client
        self.bucket = bucket
        self.prefix = trimmed
        self.headers = headers
        self.partSize = partSize
    }

    public var location: String {
        "s3://\(bucket)\(prefix.isEmpty ? "" : "/" + prefix) at \(client.configuration.endpoint)"
    }

    /// The object key of a file of the tree.
    /// - Throws: ``BacklotError/Code/invalidInput`` for a path outside the tree.
    public func key(_ relative: String) throws -> String {
        try PublishedTreePath.validate(relative)
        return prefix.isEmpty ? relative : prefix + "/" + relative
    }

    public func write(_ bytes: [UInt8], at relative: String) throws {
        try client.putObject(
            bucket: bucket, key: try key(relative), body: .bytes(bytes),
            contentType: PublishedTreeHeaders.contentType(relative), cacheControl: headers.cacheControl(relative))
    }

    public func copyFile(from source: String, to relative: String, replacing: Bool) throws {
        let key = try key(relative)
        if !replacing, try client.headObject(bucket: bucket, key: key) != nil { return }
        try client.uploadFile(
            bucket: bucket, key: key, path: source, partSize: partSize,
            contentType: PublishedTreeHeaders.contentType(relative), cacheControl: headers.cacheControl(relative))
    }

    public func read(_ relative: String, atMost limit: UInt64) throws -> [UInt8]? {
        do {
            return try client.getObject(bucket: bucket, key: try key(relative), limit: limit).bytes
        } catch let e as BacklotError where e.code == .notFound {
            return nil
        }
    }

    public func remove(_ relative: String) throws {
        try client.deleteObject(bucket: bucket, key: try key(relative))  // S3 answers 204 for a missing key too
    }

    public func fileNames(in relative: String) throws -> [String] {
        let folder = try key(relative) + "/"
        var names: [String] = []
        for entry in try client.listAllObjects(bucket: bucket, prefix: folder, delimiter: "/") {
            let name = String(entry.key.dropFirst(folder.count))
            if !name.isEmpty, !name.hasPrefix(".") { names.append(name) }
        }
        return names.sorted()
    }

    public func exists(_ relative: String) throws -> Bool {
        let key = try key(relative)
        if try client.headObject(bucket: bucket, key: key) != nil { return true }
        let page = try client.listObjects(bucket: bucket, prefix: key + "/", maximumKeys: 1)
        return !page.entries.isEmpty
    }

    public func makeFolder(_ relative: String) throws {
        try PublishedTreePath.validate(relative)
    }
}
