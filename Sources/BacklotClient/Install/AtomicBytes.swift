import Synchronization

/// A byte counter shared by download threads.
final class AtomicBytes: Sendable {
    private let storage = Atomic<UInt64>(0)
    @discardableResult
    func add(_ n: UInt64) -> UInt64 { storage.wrappingAdd(n, ordering: .relaxed).newValue }
    var value: UInt64 { storage.load(ordering: .relaxed) }
}
