/// What a HEAD or GET says about an object.
public struct S3ObjectInfo: Sendable, Hashable {
    /// The whole object's size in bytes (for a ranged GET too, from `Content-Range`).
    public let size: UInt64
    /// The ETag, quotes included, as the server sent it (what `If-Match` takes).
    public let etag: String
    public let contentType: String?
    public let cacheControl: String?
    /// `Last-Modified`, as sent.
    public let lastModified: String?
    /// For a ranged GET: the first byte sent.
    public let rangeStart: UInt64?
    /// Bytes of the body this response carried (0 for a HEAD).
    public let bodyLength: UInt64
}
