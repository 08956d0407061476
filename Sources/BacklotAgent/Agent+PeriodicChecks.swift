import BacklotBasics
import BacklotClient
import BacklotContainer
import BacklotExtension
import BacklotFormat
import BacklotTaskScheduler
import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The periodic check: when it is due, and the record of the last one.
extension Agent {
    func enqueuePeriodicIfDue() {
        let now = clock.now
        let policy = PeriodicCheckPolicy(baseInterval: configuration.periodicCheckInterval)
        let interval = policy.interval(launches: scheduler.appLaunches(inLast: 30), now: now)
        guard let elapsed = periodicElapsed() else {
            markPeriodicCheck()  // the first start sets the clock going
            return
        }
        guard elapsed >= interval else { return }
        markPeriodicCheck()
        if (try? store.queued().contains { $0.request == .periodic }) == true { return }
        _ = try? store.enqueue(.periodic, bypassBudget: false)
        log("periodic: a check is due (every \(CheckedInteger.secondsText(interval)) s for this app's use)")
    }

    /// Seconds since the last periodic check, on the monotonic clock within this boot (a step of
    /// the wall clock neither delays nor hastens the checks), on the wall clock across a reboot;
    /// nil when there was none yet. `lastPeriodic` is the check's wall-clock time;
    /// `lastPeriodicReading` ("WALL UPTIME BOOT") adds the monotonic reading, used only while it
    /// belongs to the same `lastPeriodic`.
    func periodicElapsed() -> TimeInterval? {
        let now = clock.now
        guard let text = (try? store.value("lastPeriodic")) ?? nil else { return nil }
        let parts = ((try? store.value("lastPeriodicReading")) ?? nil)?.split(separator: " ").map(String.init) ?? []
        if parts.count == 3, parts[0] == text, let wall = Double(text), wall.isFinite, let uptime = Double(parts[1]),
            uptime.isFinite,
            parts[2] == clock.bootID, uptime <= clock.uptime
        {
            return clock.uptime - uptime
        }
        // Stored text another process may have written: "nan", "inf" or a time in the future would
        // hold the checks back forever, so they count as no check yet.
        guard let last = Double(text), last.isFinite, last <= now.timeIntervalSince1970 else { return nil }
        return now.timeIntervalSince1970 - last
    }

    func markPeriodicCheck() {
        let wall = String(clock.now.timeIntervalSince1970)
        try? store.setValue("lastPeriodic", wall)
        try? store.setValue("lastPeriodicReading", "\(wall) \(clock.uptime) \(clock.bootID)")
    }
}
