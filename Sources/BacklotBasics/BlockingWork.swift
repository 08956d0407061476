import Foundation

/// The one bridge from async code to blocking work — a transfer, file I/O, a child process, a
/// SQLite transaction that may wait for a lock. The work runs on a thread of its own, never on
/// Swift's cooperative pool, which a blocked thread would starve; the caller's task is suspended
/// meanwhile. Backlot's cores are blocking and synchronous; their async façades (AssetPackManager,
/// the agent) cross to them through this, and only this.
///
/// ```swift
/// let catalog = try await BlockingWork.run { try client.fetch() }
/// ```
public enum BlockingWork {
    /// Runs `body` on a new thread and returns (or throws) what it did.
    public static func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread { continuation.resume(with: Result { try body() }) }
        }
    }
}
