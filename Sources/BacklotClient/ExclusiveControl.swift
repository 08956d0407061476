import BacklotBasics
import BacklotContainer
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The container's cross-process exclusive lock (``ContainerLock/exclusiveControl``), re-entrant
/// within a process: a handler that runs under it may take it again (to move a file, to stop
/// listening) without deadlocking, and threads of one process take turns.
final class ExclusiveControl: @unchecked Sendable {
    private static let registry = Mutex<[String: ExclusiveControl]>([:])

    /// The one instance for a container in this process.
    static func of(container path: String) -> ExclusiveControl {
        registry.withLock { r in
            if let e = r[path] { return e }
            let e = ExclusiveControl(layout: ContainerLayout(root: path))
            r[path] = e
            return e
        }
    }

    private let layout: ContainerLayout
    private let lock = NSRecursiveLock()
    private var held: FileLock?
    private var depth = 0

    private init(layout: ContainerLayout) { self.layout = layout }

    func run<T>(_ body: () throws -> T) throws -> T {
        lock.lock()
        defer { lock.unlock() }
        if depth == 0 { held = try layout.acquire(.exclusiveControl, waiting: true) }
        depth += 1
        defer {
            depth -= 1
            if depth == 0 {
                held?.release()
                held = nil
            }
        }
        return try body()
    }
}
