import Dispatch
import Synchronization

/// The bridge from a blocking C call to the client's async API: the work runs as a task while the
/// caller's thread waits (never a thread of Swift's cooperative pool: C threads are the caller's
/// own), waking every `interval` to run `poll` on the caller's thread (progress callbacks).
enum BlockingCall {
    static func run<T: Sendable>(
        polling poll: (() -> Void)? = nil, every interval: DispatchTimeInterval = .milliseconds(50),
        _ body: @escaping @Sendable () async throws -> T
    ) throws -> T {
        let outcome = Mutex<Result<T, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task {
            let result: Result<T, any Error>
            do { result = .success(try await body()) } catch { result = .failure(error) }
            outcome.withLock { $0 = result }
            done.signal()
        }
        if let poll {
            while done.wait(timeout: .now() + interval) == .timedOut { poll() }
        } else {
            done.wait()
        }
        guard let result = outcome.withLock({ $0 }) else {
            throw CallError(status: CStatus.internalError, message: "libbacklot: a call ended without an outcome")
        }
        return try result.get()
    }
}
