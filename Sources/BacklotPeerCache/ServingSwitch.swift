import Synchronization

/// Whether a peer cache may serve now, set off the request path (by the agent's timer, from the
/// device's power and network) and read by every request: a request never waits for the
/// conditions to be read (NetworkManager can take seconds to answer).
///
/// ```swift
/// let serving = ServingSwitch()
/// serving.set(conditionsAllowServing)
/// let cache = try PeerCacheServer(containerPath: path, settings: settings, isAllowed: { serving.isOn })
/// ```
public final class ServingSwitch: Sendable {
    private let on: Atomic<Bool>

    public init(_ initial: Bool = false) { on = Atomic(initial) }

    public var isOn: Bool { on.load(ordering: .acquiring) }

    /// Sets the switch; returns whether it changed.
    @discardableResult
    public func set(_ value: Bool) -> Bool {
        on.exchange(value, ordering: .acquiringAndReleasing) != value
    }
}
