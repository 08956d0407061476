import Dispatch

/// A Dispatch timer that calls `body` every `interval` seconds on a queue of its own until
/// ``cancel()`` (or until it is released). Sendable, so that it can be kept under a `Mutex`.
///
/// ```swift
/// let timer = RepeatingTimer(label: "backlot.poll", every: 1) { poll() }
/// timer.cancelAndWait()  // no call runs after this, and `body` is released
/// ```
// Safe because: every field is `let`; a Dispatch source, queue and group are thread-safe (libdispatch locks
// `cancel`, `schedule` and the handlers), though not declared `Sendable` (`RepeatingTimerTests.cancelledByManyThreadsAtOnce`).
public final class RepeatingTimer: @unchecked Sendable {
    private let source: any DispatchSourceTimer
    private let queue: DispatchQueue
    /// Left by the cancel handler, which libdispatch runs on `queue` after the call in progress and
    /// after it has released `body` (and whatever `body` captured).
    private let released = DispatchGroup()
    /// Set on `queue` only: true when the calling code runs inside `body`.
    private let insideBody = DispatchSpecificKey<Bool>()

    /// - Parameter after: seconds before the first call (default: one interval).
    public init(
        label: String, every interval: Double, after delay: Double? = nil, _ body: @escaping @Sendable () -> Void
    ) {
        queue = DispatchQueue(label: label)
        queue.setSpecific(key: insideBody, value: true)
        source = DispatchSource.makeTimerSource(queue: queue)
        released.enter()
        source.setCancelHandler { [released] in released.leave() }
        source.schedule(deadline: .now() + (delay ?? interval), repeating: interval)
        source.setEventHandler(handler: body)
        source.resume()
    }

    /// Stops the calls to come; a call in progress goes on (it may be the caller). libdispatch
    /// releases `body` a moment later, on the timer's queue.
    public func cancel() { source.cancel() }

    /// Stops the calls to come and waits until a call in progress has returned and `body` is
    /// released: what the body uses may be torn down afterwards (a process about to exit, a lease
    /// about to be released). Called from the body itself, it only cancels (its own call is the one
    /// in progress). Never call it while holding a lock the body takes.
    public func cancelAndWait() {
        source.cancel()
        if DispatchQueue.getSpecific(key: insideBody) == true { return }
        released.wait()
    }

    deinit { source.cancel() }
}
