import Foundation

/// When `backlot upload` tries again after a failed try, and when it gives up: tries are counted
/// since the upload last moved on (the server received more bytes), and each waits 0.2 s longer
/// than the one before, at most 3 s. Given up after ``maximumTries`` tries without progress (about
/// 100 s); a server that says it is busy (503: it holds its budget of parts, or sheds load) is
/// waited for up to ``busyFor`` without progress instead.
///
/// ```swift
/// var backOff = UploadBackOff()
/// if let pause = backOff.failed(busy: true, received: 4096, now: Date()) {
///     Thread.sleep(forTimeInterval: pause)   // then resume at byte 4096
/// } else {
///     throw error   // given up
/// }
/// ```
struct UploadBackOff {
    /// Tries without progress before giving up (when the server is not busy).
    static let maximumTries = 40
    /// How long a busy server is waited for without progress.
    static let busyFor: TimeInterval = 15 * 60

    /// Tries since the upload last moved on.
    private(set) var tries = 0
    /// When the first of them failed.
    private var stalledSince: Date?
    /// The bytes the server had at the last failure.
    private var received: UInt64

    /// - Parameter received: the bytes the server has when the upload starts.
    init(received: UInt64 = 0) {
        self.received = received
    }

    /// After a failed try (`busy`: the server answered 503), with the bytes the server now has:
    /// the pause before the next try, or nil to give up.
    mutating func failed(busy: Bool, received: UInt64, now: Date) -> TimeInterval? {
        if received > self.received {
            tries = 0
            stalledSince = nil
            self.received = received
        }
        tries += 1
        let since = stalledSince ?? now
        stalledSince = since
        let giveUp = busy ? now.timeIntervalSince(since) > Self.busyFor : tries > Self.maximumTries
        return giveUp ? nil : min(0.2 * Double(tries), 3)
    }
}
