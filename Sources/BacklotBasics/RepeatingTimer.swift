import Dispatch

/// A Dispatch timer that calls `body` every `interval` seconds on a queue of its own until
/// ``cancel()`` (or until it is released). Sendable, so that it can be kept under a `Mutex`.
///
/// ```swift
/// let timer = RepeatingTimer(label: "backlot.poll", every: 1) { poll() }
/// timer.cancel()
/// ```
// Safe because: both fields are `let`, and a Dispatch source and queue are thread-safe (libdispatch locks `cancel`,
// `schedule` and the handler), though not declared `Sendable`.
public final class RepeatingTimer: @unchecked Sendable {
    private let source: any DispatchSourceTimer
    private let queue: DispatchQueue

    /// - Parameter after: seconds before the first call (default: one interval).
    public init(
        label: String, every interval: Double, after delay: Double? = nil, _ body: @escaping @Sendable () -> Void
    ) {
        queue = DispatchQueue(label: label)
        source = DispatchSource.makeTimerSource(queue: queue)
        source.schedule(deadline: .now() + (delay ?? interval), repeating: interval)
        source.setEventHandler(handler: body)
        source.resume()
    }

    /// Stops the calls to come; a call in progress goes on (it may be the caller).
    public func cancel() { source.cancel() }

    /// Stops the calls to come and waits until a call in progress has returned: what the body
    /// uses may be torn down afterwards (a process about to exit, a lease about to be released).
    /// Never call it from the body, nor while holding a lock the body takes.
    public func cancelAndWait() {
        source.cancel()
        queue.sync {}
    }

    deinit { source.cancel() }
}
