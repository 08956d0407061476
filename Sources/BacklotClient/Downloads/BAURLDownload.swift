import Foundation

/// Apple's 2022 names for a URL download (`BADownload`, `BAURLDownload`): one value type here,
/// ``URLDownload``, since a Backlot download is always a URL download (docs/porting.md).
public typealias BADownload = URLDownload
public typealias BAURLDownload = URLDownload
public typealias BADownloaderPriority = URLDownload.Priority

extension URLDownload {
    /// Where a download is (Apple's `BADownload.State`, with its raw values).
    public enum State: Int, Sendable, Hashable {
        case failed = -1
        case created = 0
        case waiting = 1
        case downloading = 2
        case finished = 3
    }

    /// Apple's `BADownload.Priority`: higher runs first, among one app's downloads.
    public struct Priority: RawRepresentable, Sendable, Hashable, Comparable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }
        public init(_ rawValue: Int) { self.rawValue = rawValue }

        public static let min = Priority(Int.min)
        public static let `default` = Priority(0)
        public static let max = Priority(Int.max)

        public static func < (a: Priority, b: Priority) -> Bool { a.rawValue < b.rawValue }
    }

    /// Apple's designated initialiser (`BAURLDownload(identifier:request:essential:fileSize:applicationGroupIdentifier:priority:)`).
    ///
    /// ```swift
    /// let download = BAURLDownload(
    ///     identifier: "intro", request: URLRequest(url: URL(string: "https://cdn.example.com/intro.m4v")!),
    ///     essential: false, fileSize: 8_000_000, applicationGroupIdentifier: "group.com.example.game", priority: .default)
    /// try BADownloadManager.shared.scheduleDownload(download)
    /// ```
    ///
    /// Only the request's URL is used (its headers and method are not: the download is a resumable
    /// GET); the application group is the container the manager was made for. A request without a
    /// URL, or a negative `fileSize`, makes a download that scheduling refuses (never a trap).
    public init(
        identifier: String, request: URLRequest, essential: Bool, fileSize: Int, applicationGroupIdentifier: String,
        priority: Priority
    ) {
        self.init(
            identifier: identifier, url: request.url ?? URL(fileURLWithPath: "/"),
            fileSize: UInt64(exactly: fileSize), isEssential: essential, priority: Self.stored(priority))
    }

    /// A non-essential download of a known size (Apple's iOS 16.4 initialiser).
    public init(identifier: String, request: URLRequest, fileSize: Int, applicationGroupIdentifier: String) {
        self.init(
            identifier: identifier, request: request, essential: false, fileSize: fileSize,
            applicationGroupIdentifier: applicationGroupIdentifier, priority: .default)
    }

    /// A non-essential download of unknown size (Apple's first initialiser, deprecated in iOS 16.4).
    public init(
        identifier: String, request: URLRequest, applicationGroupIdentifier: String, priority: Priority = .default
    ) {
        self.init(
            identifier: identifier, url: request.url ?? URL(fileURLWithPath: "/"), fileSize: nil, isEssential: false,
            priority: Self.stored(priority))
    }

    /// The container stores a priority as an SQLite integer: Apple's extremes are kept inside it.
    static func stored(_ p: Priority) -> Int { Swift.max(Int(Int32.min), Swift.min(Int(Int32.max), p.rawValue)) }

    /// The same download, not essential (Apple's `removingEssential()`): what an app schedules
    /// again after an essential download failed.
    public func removingEssential() -> URLDownload {
        URLDownload(identifier: identifier, url: url, fileSize: fileSize, isEssential: false, priority: priority)
    }

    /// Apple's system-assigned identifier: the container keys downloads by their identifier, so it is that.
    public var uniqueIdentifier: String { identifier }

    /// A copy in another state.
    func with(state: State) -> URLDownload {
        var copy = self
        copy.state = state
        return copy
    }
}
