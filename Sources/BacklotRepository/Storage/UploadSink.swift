/// One request's part of an upload, appended in order (``ArchiveStore/openUpload(_:record:)``).
public protocol UploadSink: AnyObject {
    /// The bytes stored before this request plus those appended since (durable once ``finish()`` returns).
    var received: UInt64 { get }

    /// Appends bytes at ``received``. The caller checks the declared size first.
    func append(_ bytes: UnsafeRawBufferPointer) throws

    /// Makes everything appended durable (and, once the declared size is reached, the upload one
    /// complete archive) and releases the upload.
    /// - Returns: the bytes now stored, which a later request resumes from.
    func finish() throws -> UInt64

    /// Releases the upload without the guarantee of ``finish()`` (a request that failed); what
    /// was made durable before stays.
    func abandon()
}
