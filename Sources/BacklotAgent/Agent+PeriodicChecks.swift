import BacklotBasics
import BacklotClient
import BacklotContainer
import BacklotExtension
import BacklotFormat
import BacklotProtocol
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
        let interval = periodicInterval()
        guard let elapsed = periodicElapsed() else {
            markPeriodicCheck()  // the first start sets the clock going
            return
        }
        guard elapsed >= periodicWait(interval: interval) else { return }
        // Queued first, the clock set going again only once it is: a check that could not be
        // queued (the database busy) is tried again next round, not skipped for a whole interval.
        if (try? store.queued().contains { $0.request == .periodic }) != true {
            do {
                _ = try store.enqueue(.periodic, bypassBudget: false)
            } catch {
                log("periodic: a check is due but could not be queued (\(error)); tried again next round")
                return
            }
            log("periodic: a check is due (about every \(CheckedInteger.secondsText(interval)) s for this app's use)")
        }
        markPeriodicCheck()
    }

    /// The periodic interval for this app's use (``PeriodicCheckPolicy``).
    func periodicInterval() -> TimeInterval {
        PeriodicCheckPolicy(baseInterval: configuration.periodicCheckInterval).interval(
            launches: scheduler.appLaunches(inLast: 30), now: clock.now)
    }

    /// Seconds from the last periodic check to the next (``CheckSchedule``): the interval spread
    /// by the factor drawn when that check was marked (`periodicFactor`, 0.8 to 1.2, so that a
    /// fleet switched on at once drifts apart), and no less than the catalog's
    /// `Backlot-Check-After` since (`periodicAtLeast`). Stored text another process may have
    /// written is bounded: a factor outside 0.5…1.5 or a wait past a day counts as none.
    func periodicWait(interval: TimeInterval) -> TimeInterval {
        func stored(_ key: String, in range: ClosedRange<Double>) -> Double? {
            guard let text = (try? store.value(key)) ?? nil, let value = Double(text), range.contains(value) else {
                return nil
            }
            return value
        }
        let factor = stored("periodicFactor", in: 0.5...1.5) ?? 1
        let atLeast = stored("periodicAtLeast", in: 0...(1.5 * Double(PublishedTreeLayout.longestCheckAfter))) ?? 0
        return max(interval * factor, atLeast)
    }

    /// Keeps the next periodic check from coming sooner than `seconds` after the last one (the
    /// catalog's `Backlot-Check-After`, at most a day), spread above it as ``CheckSchedule`` does.
    func deferNextPeriodicCheck(atLeast seconds: TimeInterval) {
        let wait = CheckSchedule(interval: 0).delay(
            after: .checked(checkAfter: Int(min(max(0, seconds), Double(PublishedTreeLayout.longestCheckAfter)))),
            random: Double.random(in: 0..<1))
        try? store.setValue("periodicAtLeast", String(wait))
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
        // The spread of the next wait: CheckSchedule's jitter on an interval of 1.
        let factor = CheckSchedule(interval: 1).delay(
            after: .checked(checkAfter: nil), random: Double.random(in: 0..<1))
        try? store.setValue("periodicFactor", String(factor))
        try? store.setValue("periodicAtLeast", "0")
        let wall = String(clock.now.timeIntervalSince1970)
        try? store.setValue("lastPeriodic", wall)
        try? store.setValue("lastPeriodicReading", "\(wall) \(clock.uptime) \(clock.bootID)")
    }
}
