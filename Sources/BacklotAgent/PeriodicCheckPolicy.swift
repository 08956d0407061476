import Foundation

/// How often the agent checks the catalog for updates, from how much the app is used (iOS checks
/// less often for apps little used): with launches on 5 or more of the last 7 days, every
/// ``baseInterval``; with a launch in the last 7 days, twice that; in the last 30 days, 4 times;
/// otherwise 8 times.
///
/// ```swift
/// let policy = PeriodicCheckPolicy(baseInterval: 6 * 3600)
/// policy.interval(launches: scheduler.appLaunches(inLast: 30), now: Date())   // 21600 for a daily player
/// ```
public struct PeriodicCheckPolicy: Sendable, Hashable {
    public var baseInterval: TimeInterval

    public init(baseInterval: TimeInterval) {
        self.baseInterval = baseInterval
    }

    public func interval(launches: [Date], now: Date) -> TimeInterval {
        let week = launches.filter { now.timeIntervalSince($0) <= 7 * 86_400 && $0 <= now }
        // day numbers as Doubles: no conversion of a stored date
        let days = Set(week.map { floor($0.timeIntervalSince1970 / 86_400) })
        if days.count >= 5 { return baseInterval }
        if !week.isEmpty { return 2 * baseInterval }
        if launches.contains(where: { now.timeIntervalSince($0) <= 30 * 86_400 && $0 <= now }) {
            return 4 * baseInterval
        }
        return 8 * baseInterval
    }
}
