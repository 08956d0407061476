import Foundation
import Synchronization

/// A task the scheduler launched (Apple's `BGTask`): do the work, then call
/// ``setTaskCompleted(success:)``; set ``expirationHandler`` to stop early when time runs out.
///
/// A task that runs out of its time budget gets its expiration handler called once; a task with no
/// expiration handler is marked failed at once; a task still running after the grace period that
/// follows is marked failed ("killed"). Completions and failures feed the next scheduling decision.
///
/// ```swift
/// scheduler.register(forTaskWithIdentifier: "com.example.game.refresh", using: nil) { task in
///     let work = Task { await refreshCatalog(); task.setTaskCompleted(success: true) }
///     task.expirationHandler = { work.cancel() }
/// }
/// ```
// Safe because: its mutable state is behind `state`'s `Mutex` and every other field is `let`; Swift checks no open
// class (Apple's `BGTask` is subclassed).
// Tested: `TaskConcurrencyTests.aTaskCompletedAndExpiredByThreadsAtOnceEndsOnce`.
public class BackgroundTask: @unchecked Sendable {
    /// The identifier of the request that launched it.
    public let identifier: String
    let kind: TaskKind
    let started: Date
    private let state = Mutex<State>(State())
    let onComplete: @Sendable (BackgroundTask, TaskOutcome) -> Void

    struct State {
        var expirationHandler: (@Sendable () -> Void)?
        var outcome: TaskOutcome?
        var expired = false
    }

    init(
        identifier: String, kind: TaskKind, started: Date,
        onComplete: @escaping @Sendable (BackgroundTask, TaskOutcome) -> Void
    ) {
        self.identifier = identifier
        self.kind = kind
        self.started = started
        self.onComplete = onComplete
    }

    /// Called once, when the task's time is about to run out; cleared after it is called.
    public var expirationHandler: (@Sendable () -> Void)? {
        get { state.withLock { $0.expirationHandler } }
        set { state.withLock { $0.expirationHandler = newValue } }
    }

    /// Tells the scheduler the work is done. Only the first call counts.
    public func setTaskCompleted(success: Bool) {
        let expired = state.withLock { $0.expired }
        finish(success ? .success : (expired ? .expired : .failure))
    }

    /// Whether the task has completed (or was marked failed).
    public var isCompleted: Bool { state.withLock { $0.outcome != nil } }

    /// How the task ended, once it has.
    public var outcome: TaskOutcome? { state.withLock { $0.outcome } }

    /// Ends the task with `outcome` unless it has already ended.
    func finish(_ outcome: TaskOutcome) {
        let first = state.withLock { s -> Bool in
            guard s.outcome == nil else { return false }
            s.outcome = outcome
            s.expirationHandler = nil
            return true
        }
        if first { onComplete(self, outcome) }
    }

    /// What expiring the task calls for.
    enum Expiry {
        /// It had already ended or expired: nothing.
        case nothing
        /// No expiration handler: it is marked failed now.
        case markFailed
        /// Call this handler (taken, so it runs once), then wait out the grace period.
        case call(@Sendable () -> Void)
    }

    /// Time is up.
    func expire() -> Expiry {
        state.withLock { s in
            guard s.outcome == nil, !s.expired else { return .nothing }
            s.expired = true
            let handler = s.expirationHandler
            s.expirationHandler = nil
            return handler.map { .call($0) } ?? .markFailed
        }
    }

    var hasExpired: Bool { state.withLock { $0.expired } }
}

/// A launched app-refresh task (Apple's `BGAppRefreshTask`).
// Safe because: it adds no state to `BackgroundTask`.
// Tested: `TaskConcurrencyTests.aTaskCompletedAndExpiredByThreadsAtOnceEndsOnce`.
public final class AppRefreshTask: BackgroundTask, @unchecked Sendable {}

/// A launched processing task (Apple's `BGProcessingTask`).
// Safe because: it adds no state to `BackgroundTask`.
// Tested: `TaskConcurrencyTests.aTaskCompletedAndExpiredByThreadsAtOnceEndsOnce`.
public final class ProcessingTask: BackgroundTask, @unchecked Sendable {}

/// How a task ended; stored in the scheduler's history.
public enum TaskOutcome: String, Sendable, Hashable {
    /// `setTaskCompleted(success: true)`.
    case success
    /// `setTaskCompleted(success: false)`.
    case failure
    /// Time ran out: there was no expiration handler, or the task completed after it was called.
    case expired
    /// Still running after the grace period that follows expiration.
    case killed

    /// Whether the next request of this identifier is held back (``TaskScheduler`` backs off after failures).
    public var isFailure: Bool { self != .success }
}
