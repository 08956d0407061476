/// A multipart upload under way, as ListMultipartUploads shows it.
public struct S3MultipartUpload: Sendable, Hashable {
    public let key: String
    public let uploadID: String
    /// `Initiated`, as sent.
    public let initiated: String?
}
