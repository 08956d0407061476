import BacklotTaskScheduler
import Synchronization

/// Reads the conditions again only once the source's last reading is older than the source says
/// a reading lasts (``DeviceConditionSource/readingLifetime``: reading Linux's may run `nmcli`).
final class CachedConditions: DeviceConditionSource {
    let source: any DeviceConditionSource
    private let cache = Mutex<(at: SuspendingClock.Instant, value: DeviceConditions)?>(nil)  // a duration: monotonic

    init(_ source: any DeviceConditionSource) {
        self.source = source
    }

    func current() -> DeviceConditions {
        if let c = cache.withLock({ $0 }), SuspendingClock.now - c.at < source.readingLifetime { return c.value }
        let value = source.current()
        cache.withLock { $0 = (SuspendingClock.now, value) }
        return value
    }
}
