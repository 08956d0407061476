import BacklotBasics
import BacklotS3

/// An archive in a bucket, read by ranged GETs (``ArchiveReader``): reads are served from one
/// window of `window` bytes fetched at a time, so reading an archive front to back (as processing
/// does) costs one request per window, and the instance holds one window in memory, never the
/// archive. Every ranged GET names the object's ETag (`If-Match`), so an object replaced while
/// it is read fails the read instead of mixing two objects' bytes.
///
/// ```swift
/// let reader = try S3ArchiveReader(client: s3, bucket: "backlot", key: "uploads/7")
/// let sha = try reader.sha256()
/// ```
public final class S3ArchiveReader: ArchiveReader {
    public let client: S3Client
    public let bucket: String
    public let key: String
    public let size: UInt64
    let etag: String
    let window: UInt64
    let source: String
    private var cached: (offset: UInt64, bytes: [UInt8])?

    /// Looks the object up (HEAD).
    /// - Throws: ``BacklotError/Code/notFound`` when there is no such object; the client's errors.
    public init(
        client: S3Client, bucket: String, key: String, window: UInt64 = 8 << 20, source: String = "the archive"
    ) throws {
        guard let info = try client.headObject(bucket: bucket, key: key) else {
            throw BacklotError(
                .notFound, "\(source) is not in the bucket (s3://\(bucket)/\(key) at \(client.configuration.endpoint))",
                context: source)
        }
        self.client = client
        self.bucket = bucket
        self.key = key
        size = info.size
        etag = info.etag
        self.window = max(1 << 16, window)
        self.source = source
    }

    public func read(count: Int, at offset: UInt64) throws -> [UInt8] {
        try checkRange(count: count, at: offset, source: source)
        guard count > 0 else { return [] }
        let end = offset + UInt64(count)
        if let c = cached, offset >= c.offset, end <= c.offset + UInt64(c.bytes.count) {
            let start = Int(offset - c.offset)
            return Array(c.bytes[start..<(start + count)])
        }
        if UInt64(count) >= window {
            return try fetch(offset, UInt64(count))
        }
        let length = min(window, size - offset)
        let bytes = try fetch(offset, length)
        cached = (offset, bytes)
        return Array(bytes[0..<count])
    }

    func fetch(_ offset: UInt64, _ length: UInt64) throws -> [UInt8] {
        let (bytes, _) = try client.getObject(
            bucket: bucket, key: key, range: .bytes(offset, offset + length - 1), ifMatch: etag,
            limit: length)
        guard UInt64(bytes.count) == length else {
            throw BacklotError(
                .objectStore, "\(bytes.count) bytes arrived for \(length) at offset \(offset) of s3://\(bucket)/\(key)",
                context: source)
        }
        return bytes
    }

    public func close() { cached = nil }
}
