import Dispatch

/// Runs `renew` every `interval` seconds on a background queue until ``stop()``: what keeps a
/// lease alive while a long piece of work (processing an archive) holds it. (A timer source may be
/// cancelled from any thread: hence `@unchecked Sendable`.)
final class LeaseRenewal: @unchecked Sendable {
    private let timer: DispatchSourceTimer

    init(every interval: Double, renew: @escaping @Sendable () -> Void) {
        let seconds = max(0.2, interval)
        timer = DispatchSource.makeTimerSource(queue: .global())
        timer.schedule(deadline: .now() + seconds, repeating: seconds)
        timer.setEventHandler(handler: renew)
        timer.resume()
    }

    func stop() { timer.cancel() }

    deinit { timer.cancel() }
}
