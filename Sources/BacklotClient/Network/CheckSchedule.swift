import BacklotProtocol
import Foundation

/// When a device checks its catalog next (docs/agent.md, "When a device checks"): what keeps a
/// release from becoming a storm that feeds itself.
///
/// - After a check, the next one is due after the device's ``interval`` spread by ±``jitter`` (a
///   fleet that was switched on at once drifts apart within a few checks), and never before the
///   `Backlot-Check-After` the catalog's answer carried (a server under load raises it), spread
///   above it by up to ``jitter`` as well.
/// - After a failed check, the device backs off exponentially — ``firstRetry``, twice that, …,
///   at most ``longestRetry`` — with "equal jitter" (each delay is half fixed, half random), and
///   never tries before the server's `Retry-After`.
///
/// ```swift
/// var generator = SystemRandomNumberGenerator()
/// let schedule = CheckSchedule(interval: 6 * 3600)
/// schedule.delay(after: .checked(checkAfter: nil), using: &generator)          // 4.8 h … 7.2 h
/// schedule.delay(after: .failed(attempt: 3, retryAfter: 120), using: &generator)  // 120 s … 180 s
/// ```
public struct CheckSchedule: Sendable, Hashable {
    /// Seconds between checks when nothing goes wrong (the agent's, from how much the app is used).
    public var interval: TimeInterval
    /// The spread of each delay, as a share of it (0.2: ±20 %).
    public var jitter: Double
    /// Seconds before the first retry of a failed check.
    public var firstRetry: TimeInterval
    /// The longest wait between failed checks (and no longer than ``interval``).
    public var longestRetry: TimeInterval

    /// How the last check ended.
    public enum Outcome: Sendable, Hashable {
        /// The catalog was read; `checkAfter` is its answer's hint in seconds, if any.
        case checked(checkAfter: Int?)
        /// The `attempt`-th failure in a row (1 for the first); `retryAfter` is the server's, if any.
        case failed(attempt: Int, retryAfter: Int?)
    }

    public init(
        interval: TimeInterval, jitter: Double = 0.2, firstRetry: TimeInterval = 30, longestRetry: TimeInterval = 3600
    ) {
        self.interval = max(0, interval)
        self.jitter = min(max(0, jitter), 0.9)
        self.firstRetry = max(1, firstRetry)
        self.longestRetry = max(1, longestRetry)
    }

    /// Seconds until the next check after `outcome`, drawn with `generator`.
    public func delay(after outcome: Outcome, using generator: inout some RandomNumberGenerator) -> TimeInterval {
        delay(after: outcome, random: Double.random(in: 0..<1, using: &generator))
    }

    /// Seconds until the next check after `outcome`, for a uniform draw `random` in [0, 1).
    public func delay(after outcome: Outcome, random: Double) -> TimeInterval {
        let u = min(max(0, random), 1)
        switch outcome {
        case .checked(let checkAfter):
            let spread = interval * (1 - jitter + 2 * jitter * u)
            guard let checkAfter, checkAfter > 0 else { return spread }
            let hint = TimeInterval(min(checkAfter, PublishedTreeLayout.longestCheckAfter))
            return max(spread, hint * (1 + jitter * u))
        case .failed(let attempt, let retryAfter):
            let cap = max(1, min(longestRetry, interval > 0 ? interval : longestRetry))
            let exponent = Double(min(max(attempt, 1), 40) - 1)
            let backoff = min(cap, firstRetry * pow(2, exponent))
            let wait = backoff / 2 + backoff / 2 * u
            guard let retryAfter, retryAfter > 0 else { return wait }
            return max(wait, TimeInterval(min(retryAfter, 3600)) * (1 + 0.5 * u))
        }
    }
}
