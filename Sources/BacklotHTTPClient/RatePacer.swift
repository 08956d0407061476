import BacklotBasics
import Foundation

/// Holds a transfer's received bytes to a rate: after each piece, how long the transfer must wait
/// to be back at `bytesPerSecond` since its first byte.
///
/// libcurl's own limit (`CURLOPT_MAX_RECV_SPEED_LARGE`, kept) reads whatever a TLS connection
/// holds decrypted, up to a hundred buffers in a row, before it looks at the rate again: from a
/// server that sends quickly, `backlot fetch --limit-rate 262144` installed a 3 MB pack in 2.5 s
/// (the curl tool took 7.3 s for it instead of 11.7), and 11.5 s with this. The wait is made in
/// the write callback, so the socket's buffers fill and TCP slows the sender, as a limit should.
///
/// ```swift
/// var pacer = RatePacer(bytesPerSecond: 256 << 10)
/// let wait = pacer.delay(afterReceiving: piece.count, at: .now)   // sleep for it
/// ```
struct RatePacer: Sendable {
    let bytesPerSecond: Int
    /// The most one call asks to wait, so that a transfer's deadline and a cancel are looked at
    /// between waits.
    static let longestWait = Duration.seconds(1)
    private var start: ContinuousClock.Instant?
    private var bytes: UInt64 = 0

    init(bytesPerSecond: Int) { self.bytesPerSecond = max(1, bytesPerSecond) }

    /// A pacer for `limit` bytes a second, nil for no limit (0).
    static func forLimit(_ limit: Int) -> RatePacer? { limit > 0 ? RatePacer(bytesPerSecond: limit) : nil }

    /// Records `count` bytes received now and waits, on the calling thread, until the transfer is
    /// back at its rate (in steps of at most ``longestWait``); stops waiting early when
    /// `isCancelled` says so.
    mutating func pace(afterReceiving count: Int, isCancelled: (() -> Bool)? = nil) {
        var wait = delay(afterReceiving: count, at: .now)
        while wait > .zero, isCancelled?() != true {
            Thread.sleep(forTimeInterval: wait.inSeconds)
            wait = delay(afterReceiving: 0, at: .now)
        }
    }

    /// Records `count` bytes received at `now` and returns how long to wait before reading more
    /// (zero when the transfer is not ahead of its rate; at most ``longestWait``).
    mutating func delay(afterReceiving count: Int, at now: ContinuousClock.Instant) -> Duration {
        let first = start ?? now
        start = first
        bytes &+= UInt64(max(0, count))
        // The second the bytes so far are due at, bounded (a day) before it becomes a Duration.
        let due = min(Double(bytes) / Double(bytesPerSecond), 86_400)
        let ahead = Duration.seconds(due) - (now - first)
        return ahead <= .zero ? .zero : min(ahead, Self.longestWait)
    }
}
