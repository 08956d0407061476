/// A URL download as `state.sqlite` keeps it (scheduled in `url_downloads`, or in an outcome of
/// `url_events`). Numbers are as stored: the reader converts them through `CheckedInteger`.
public struct URLDownloadRecord: Sendable, Hashable {
    public let identifier: String
    public let url: String
    public let fileSize: Int64?
    public let essential: Bool
    public let priority: Int64

    public init(identifier: String, url: String, fileSize: Int64?, essential: Bool, priority: Int64) {
        self.identifier = identifier
        self.url = url
        self.fileSize = fileSize
        self.essential = essential
        self.priority = priority
    }
}

/// Where a recorded URL download outcome is in its delivery (`url_events.delivered`).
public enum URLOutcomeState: Int64, Sendable, Hashable {
    /// Posted for the app, which claims it the next time it listens.
    case forApp = 0
    /// Delivered; nothing more to do.
    case done = 1
    /// Reserved for the extension, whose call has not claimed it yet.
    case reserved = 2
    /// Recorded in the transaction that retired the download, not handed to anyone yet.
    case recorded = 3
    /// Claimed by the extension's process; the agent has not closed the reservation yet.
    case takenByExtension = 4
}

/// One recorded outcome of a URL download (`url_events`).
public struct URLOutcomeRecord: Sendable, Hashable {
    public let seq: Int64
    public let download: URLDownloadRecord
    /// `finished` or `failed`.
    public let kind: String
    /// The finished file's hand-over path.
    public let path: String?
    public let message: String?
    /// Apple's `BAErrorCode`, when known.
    public let code: Int64?
    /// nil for a value no version of Backlot writes.
    public let state: URLOutcomeState?
    /// The partial file still to be renamed to `path`.
    public let staged: String?
    /// The role that recorded it (`app` or `agent`).
    public let owner: String
}
