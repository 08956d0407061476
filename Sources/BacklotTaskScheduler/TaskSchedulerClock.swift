import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Where the scheduler (and the agent) read the time. The system clock in apps; ``ManualClock``
/// in tests, so that earliest-begin dates, budgets and back-off are exercised without waiting.
///
/// Two readings: ``now``, the wall clock, only for calendar facts (an `earliestBeginDate`, the UTC
/// day of a budget); and ``uptime``, a monotonic clock (CLOCK_MONOTONIC, shared by the processes
/// of one boot, ``bootID``), for every duration (task budgets and grace periods, back-off,
/// periodic intervals), so that a step of the wall clock neither stretches nor shortens them.
public protocol TaskSchedulerClock: Sendable {
    /// The wall clock.
    var now: Date { get }
    /// Seconds on a monotonic clock that a change of the wall clock does not move.
    var uptime: TimeInterval { get }
    /// What ``uptime`` readings are comparable within: one boot of the machine.
    var bootID: String { get }
}

extension TaskSchedulerClock {
    public var uptime: TimeInterval { SystemClock.monotonicSeconds() }
    public var bootID: String { SystemClock.currentBootID }
}

/// The wall clock, and CLOCK_MONOTONIC for durations.
public struct SystemClock: TaskSchedulerClock {
    public init() {}
    public var now: Date { Date() }
    public var uptime: TimeInterval { Self.monotonicSeconds() }
    public var bootID: String { Self.currentBootID }

    static func monotonicSeconds() -> TimeInterval {
        var t = timespec()
        clock_gettime(CLOCK_MONOTONIC, &t)
        return TimeInterval(t.tv_sec) + TimeInterval(t.tv_nsec) / 1e9
    }

    /// The kernel's boot ID (`/proc/sys/kernel/random/boot_id`), read once.
    static let currentBootID: String = {
        let text = (try? String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8)) ?? ""
        return text.trimmingCharacters(in: .whitespacesAndNewlines)
    }()
}

/// A clock that moves only when told to.
///
/// ```swift
/// let clock = ManualClock(Date(timeIntervalSince1970: 0))
/// clock.advance(by: 31)   // past a refresh task's budget
/// clock.step(by: -3600)   // the wall clock set back an hour; durations are not affected
/// scheduler.runDueTasks()
/// ```
public final class ManualClock: TaskSchedulerClock {
    private let time: Mutex<(wall: Date, uptime: TimeInterval)>

    public init(_ start: Date = Date(timeIntervalSince1970: 1_800_000_000)) {
        time = Mutex((start, 1000))
    }

    public var now: Date { time.withLock { $0.wall } }
    public var uptime: TimeInterval { time.withLock { $0.uptime } }
    public var bootID: String { "manual" }

    /// Time passes: both the wall clock and the monotonic clock move.
    public func advance(by seconds: TimeInterval) {
        time.withLock {
            $0.wall = $0.wall.addingTimeInterval(seconds)
            $0.uptime += max(0, seconds)
        }
    }

    /// The wall clock is set (by an administrator, NTP): only it moves.
    public func step(by seconds: TimeInterval) {
        time.withLock { $0.wall = $0.wall.addingTimeInterval(seconds) }
    }
}

/// A moment read on both clocks, for a duration that may be measured in another process of the
/// same boot (a run's end, the last periodic check).
public struct ClockReading: Sendable, Hashable {
    public var wall: Date
    public var uptime: TimeInterval
    public var bootID: String

    public init(wall: Date, uptime: TimeInterval, bootID: String) {
        self.wall = wall
        self.uptime = uptime
        self.bootID = bootID
    }

    public init(_ clock: any TaskSchedulerClock) {
        self.init(wall: clock.now, uptime: clock.uptime, bootID: clock.bootID)
    }

    /// Seconds from this reading to `clock`'s present: on the monotonic clock within one boot; on
    /// the wall clock across a reboot (never negative).
    public func elapsed(until clock: any TaskSchedulerClock) -> TimeInterval {
        if !bootID.isEmpty, bootID == clock.bootID, uptime <= clock.uptime { return clock.uptime - uptime }
        return max(0, clock.now.timeIntervalSince(wall))
    }
}
