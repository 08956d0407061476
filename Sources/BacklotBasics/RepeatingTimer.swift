import Dispatch

/// A Dispatch timer that calls `body` every `interval` seconds on a queue of its own until
/// ``cancel()`` (or until it is released). Sendable, so that it can be kept under a `Mutex`.
///
/// ```swift
/// let timer = RepeatingTimer(label: "backlot.poll", every: 1) { poll() }
/// timer.cancel()
/// ```
public final class RepeatingTimer: @unchecked Sendable {
    private let source: any DispatchSourceTimer

    /// - Parameter after: seconds before the first call (default: one interval).
    public init(
        label: String, every interval: Double, after delay: Double? = nil, _ body: @escaping @Sendable () -> Void
    ) {
        source = DispatchSource.makeTimerSource(queue: DispatchQueue(label: label))
        source.schedule(deadline: .now() + (delay ?? interval), repeating: interval)
        source.setEventHandler(handler: body)
        source.resume()
    }

    public func cancel() { source.cancel() }

    deinit { source.cancel() }
}
