import Dispatch
import Synchronization

extension BlockingPool {
    /// Runs `body` on a thread of the pool and returns (or throws) what it did; the caller's task
    /// is suspended meanwhile.
    ///
    /// - Throws: what `body` throws; `CancellationError` when the task is cancelled before `body`
    ///   started (it then never starts; once started, it runs to its end);
    ///   ``BacklotError/Code/unavailable`` when the pool was stopped (``stop()``).
    ///
    /// ```swift
    /// let size = try await BlockingPool.shared.run { try FileSystem.size(of: path) }
    /// ```
    public func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        let ticket = Ticket<T>()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
                guard ticket.queue(continuation) else {
                    continuation.resume(throwing: CancellationError())
                    return
                }
                let queued = submit {
                    guard let continuation = ticket.start() else { return }  // cancelled while queued
                    continuation.resume(with: Result { try body() })
                }
                if !queued, let continuation = ticket.start() {
                    continuation.resume(
                        throwing: BacklotError(
                            .unavailable, "the blocking pool \(name) is stopped", context: name,
                            hint: "submit work before the pool is stopped"))
                }
            }
        } onCancel: {
            ticket.cancel()
        }
    }

    /// Runs async `body` from synchronous code and waits for its outcome: the command line's
    /// commands, and libbacklot's C calls on their caller's thread. While it waits, `poll` (if
    /// any) is called on the waiting thread every `interval` seconds — progress callbacks that
    /// must run on the caller's thread. When `isCancelled` (if any), asked as often, says so,
    /// `body`'s task is cancelled (once): a synchronous caller's way to cancel async work it
    /// waits for (a C caller's `backlot_cancel`).
    ///
    /// Never call it on a thread of Swift's cooperative pool (from async code): the waiting
    /// thread is blocked, and `body` may need it to run.
    ///
    /// - Throws: what `body` throws (`CancellationError`, typically, once cancelled).
    ///
    /// ```swift
    /// let repaired = try BlockingPool.waitForAsync { try await manager.repair() }
    /// ```
    public static func waitForAsync<T: Sendable>(
        polling poll: (() -> Void)? = nil, every interval: Double = 0.05,
        cancelledWhen isCancelled: (() -> Bool)? = nil,
        _ body: @escaping @Sendable () async throws -> T
    ) throws -> T {
        let outcome = Mutex<Result<T, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        let task = Task.detached {
            let result: Result<T, any Error>
            do { result = .success(try await body()) } catch { result = .failure(error) }
            outcome.withLock { $0 = result }
            done.signal()
        }
        if poll != nil || isCancelled != nil {
            var cancelled = false
            while done.wait(timeout: .now() + interval) == .timedOut {
                poll?()
                if !cancelled, isCancelled?() == true {
                    cancelled = true
                    task.cancel()
                }
            }
        } else {
            done.wait()
        }
        guard let result = outcome.withLock({ $0 }) else {
            preconditionFailure("the outcome is set before the semaphore is signalled")
        }
        return try result.get()
    }
}

/// One job's way from its queue to its caller: exactly one of the pool's thread (which starts
/// the job) and the task's cancellation (before it started) resumes the caller.
private final class Ticket<T: Sendable>: Sendable {
    private enum State {
        case created
        case queued(CheckedContinuation<T, any Error>)
        case started
        case cancelled
    }
    private let state = Mutex(State.created)

    /// Records the continuation; false when the task was cancelled already.
    func queue(_ continuation: CheckedContinuation<T, any Error>) -> Bool {
        state.withLock { s in
            guard case .created = s else { return false }
            s = .queued(continuation)
            return true
        }
    }

    /// The continuation, for the thread that starts the job; nil when it was cancelled first.
    func start() -> CheckedContinuation<T, any Error>? {
        state.withLock { s in
            guard case .queued(let continuation) = s else { return nil }
            s = .started
            return continuation
        }
    }

    /// Cancels the job if it has not started, and resumes its caller with `CancellationError`.
    func cancel() {
        let continuation = state.withLock { s -> CheckedContinuation<T, any Error>? in
            switch s {
            case .created:
                s = .cancelled
                return nil
            case .queued(let continuation):
                s = .cancelled
                return continuation
            case .started, .cancelled:
                return nil
            }
        }
        continuation?.resume(throwing: CancellationError())
    }
}
