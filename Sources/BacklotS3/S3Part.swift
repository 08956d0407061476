/// One uploaded part of a multipart upload.
public struct S3Part: Sendable, Hashable {
    /// 1 to 10,000.
    public let number: Int
    /// The part's ETag, quotes included (what completing the upload names it by).
    public let etag: String
    public let size: UInt64

    public init(number: Int, etag: String, size: UInt64) {
        self.number = number
        self.etag = etag
        self.size = size
    }
}
