/// One page of a ListObjectsV2 answer.
public struct S3ListPage: Sendable, Hashable {
    /// One object in a listing.
    public struct Entry: Sendable, Hashable {
        public let key: String
        public let size: UInt64
        public let etag: String
        public let lastModified: String?
    }
    public let entries: [Entry]
    /// Key prefixes rolled up by the delimiter, when one was given.
    public let commonPrefixes: [String]
    /// Pass this to get the next page; nil on the last page.
    public let continuationToken: String?
}
