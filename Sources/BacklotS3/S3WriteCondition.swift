/// A condition on a put, for compare-and-swap: the put happens only when it holds, otherwise it
/// fails with ``BacklotError/Code/preconditionFailed`` and the object is left as it was.
public enum S3WriteCondition: Sendable, Hashable {
    /// Always write.
    case none
    /// Write only if no object has the key (`If-None-Match: *`): create, never overwrite.
    case ifAbsent
    /// Write only if the object's ETag is this one (`If-Match`): replace exactly the version read.
    case ifMatches(String)
}
