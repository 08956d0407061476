/// The processing state of an uploaded version (App Store Connect's names).
public enum VersionState: String, Sendable, Hashable {
    case awaitingUpload = "AWAITING_UPLOAD"
    case processing = "PROCESSING"
    case complete = "COMPLETE"
    case failed = "FAILED"
}
