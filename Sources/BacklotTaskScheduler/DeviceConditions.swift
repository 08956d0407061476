import Foundation
import Synchronization

/// The machine's state that decides whether background work may run now.
public struct DeviceConditions: Sendable, Hashable, CustomStringConvertible {
    /// A network interface other than loopback is up and there is a default route.
    public var networkAvailable: Bool
    /// The network is metered (a phone's hotspot, a mobile connection): prefetch downloads wait.
    public var networkMetered: Bool
    /// On mains power (or no battery at all).
    public var onExternalPower: Bool
    /// Running on a battery that is low: background work waits, as Low Power Mode stops it on iOS.
    public var batteryLow: Bool

    public init(
        networkAvailable: Bool = true, networkMetered: Bool = false, onExternalPower: Bool = true,
        batteryLow: Bool = false
    ) {
        self.networkAvailable = networkAvailable
        self.networkMetered = networkMetered
        self.onExternalPower = onExternalPower
        self.batteryLow = batteryLow
    }

    public var description: String {
        "network \(networkAvailable ? (networkMetered ? "metered" : "unmetered") : "offline"), "
            + (onExternalPower ? "external power" : "battery\(batteryLow ? " (low)" : "")")
    }
}

/// Where the scheduler and the agent read ``DeviceConditions``: ``LinuxDeviceConditions`` for
/// real, ``ManualConditions`` in tests.
public protocol DeviceConditionSource: Sendable {
    func current() -> DeviceConditions
    /// How long a reading may be reused before the source is read again (zero by default: every
    /// read is fresh, as conditions set by hand must be).
    var readingLifetime: Duration { get }
}

extension DeviceConditionSource {
    public var readingLifetime: Duration { .zero }
}

/// Conditions set by hand (tests, or a machine whose state is known).
public final class ManualConditions: DeviceConditionSource {
    private let value: Mutex<DeviceConditions>

    public init(_ conditions: DeviceConditions = DeviceConditions()) {
        value = Mutex(conditions)
    }

    public func current() -> DeviceConditions { value.withLock { $0 } }

    public func set(_ conditions: DeviceConditions) { value.withLock { $0 = conditions } }

    public func update(_ change: (inout DeviceConditions) -> Void) { value.withLock { change(&$0) } }
}
