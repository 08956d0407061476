import Foundation
import Synchronization

/// Where the scheduler reads the time. The system clock in apps; ``ManualClock`` in tests, so
/// that earliest-begin dates, budgets and back-off are exercised without waiting.
public protocol TaskSchedulerClock: Sendable {
    var now: Date { get }
}

/// The wall clock.
public struct SystemClock: TaskSchedulerClock {
    public init() {}
    public var now: Date { Date() }
}

/// A clock that moves only when told to.
///
/// ```swift
/// let clock = ManualClock(Date(timeIntervalSince1970: 0))
/// clock.advance(by: 31)   // past a refresh task's budget
/// scheduler.runDueTasks()
/// ```
public final class ManualClock: TaskSchedulerClock {
    private let time: Mutex<Date>

    public init(_ start: Date = Date(timeIntervalSince1970: 1_800_000_000)) {
        time = Mutex(start)
    }

    public var now: Date { time.withLock { $0 } }

    public func advance(by seconds: TimeInterval) {
        time.withLock { $0 = $0.addingTimeInterval(seconds) }
    }
}
