import Synchronization

/// A token bucket of bytes per second shared by every connection of a peer cache: a chunk is sent
/// only when the bucket holds its size (refilled at ``rate``, holding at most one second of it); a
/// chunk larger than a second's worth goes when the bucket is full, and the bucket owes the rest.
///
/// ```swift
/// let budget = SendBudget(rate: 20 << 20)
/// if budget.take(bytes.count) { send(bytes) } else { answer503() }
/// ```
final class SendBudget: Sendable {
    let rate: Double
    let capacity: Double
    private let state: Mutex<(tokens: Double, last: ContinuousClock.Instant)>

    init(rate: UInt64) {
        self.rate = Double(max(1, rate))
        capacity = self.rate
        state = Mutex((capacity, .now))
    }

    /// Takes `bytes` from the bucket; false (and nothing taken) when it holds fewer.
    func take(_ bytes: Int) -> Bool {
        let now = ContinuousClock.now
        return state.withLock { s in
            let elapsed = now - s.last
            s.tokens = min(capacity, s.tokens + elapsed.inSeconds * rate)
            s.last = now
            guard s.tokens >= min(Double(bytes), capacity) else { return false }
            s.tokens -= Double(bytes)
            return true
        }
    }

    /// Gives back what ``take(_:)`` took for a chunk that was then not sent.
    func refund(_ bytes: Int) {
        state.withLock { $0.tokens = min(capacity, $0.tokens + Double(bytes)) }
    }

    /// Seconds until `bytes` could be taken (at least 1, for `Retry-After`).
    func secondsUntil(_ bytes: Int) -> Int {
        let missing = state.withLock { max(0, min(Double(bytes), capacity) - $0.tokens) }
        return max(1, Int((missing / rate).rounded(.up)))
    }
}
