/// How a failed request is tried again: exponential backoff with jitter, a bounded number of attempts.
///
/// Only what is safe to repeat is repeated: reads, deletes, unconditional puts, part uploads, and
/// completing a multipart upload; on a broken connection, a conditional put or the creation of a
/// multipart upload is not (the first attempt may have taken effect), on an answer saying the
/// server did nothing (503 SlowDown, 500, 502, 504, RequestTimeout) every request is.
///
/// ```swift
/// let patient = S3RetryPolicy(maximumAttempts: 8, initialDelay: .milliseconds(200), maximumDelay: .seconds(10))
/// ```
public struct S3RetryPolicy: Sendable, Hashable {
    /// Attempts in all, the first included (at least 1).
    public var maximumAttempts: Int
    /// The wait before the second attempt; it doubles each time, up to ``maximumDelay``.
    public var initialDelay: Duration
    public var maximumDelay: Duration

    public init(
        maximumAttempts: Int = 5, initialDelay: Duration = .milliseconds(100), maximumDelay: Duration = .seconds(5)
    ) {
        self.maximumAttempts = max(1, maximumAttempts)
        self.initialDelay = initialDelay
        self.maximumDelay = maximumDelay
    }

    /// No retries at all.
    public static let never = S3RetryPolicy(maximumAttempts: 1)

    /// The wait after failed attempt `attempt` (1-based): the doubled delay, capped, times a random
    /// factor between 0.5 and 1 (so that many clients do not retry in step).
    public func delay(after attempt: Int) -> Duration {
        var d = initialDelay
        for _ in 1..<max(1, min(attempt, 30)) {
            d = d * 2
            if d >= maximumDelay { break }
        }
        d = min(d, maximumDelay)
        return d * Double.random(in: 0.5...1.0)
    }
}
