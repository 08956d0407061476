import BacklotBasics
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The container's cross-process exclusive lock (`DIR/.exclusive.lock`, `flock`), re-entrant
/// within a process: a handler that runs under it may take it again (to move a file, to stop
/// listening) without deadlocking, and threads of one process take turns.
final class ExclusiveControl: @unchecked Sendable {
    private static let registry = Mutex<[String: ExclusiveControl]>([:])

    /// The one instance for a container in this process.
    static func of(container path: String) -> ExclusiveControl {
        registry.withLock { r in
            if let e = r[path] { return e }
            let e = ExclusiveControl(path: path + "/.exclusive.lock")
            r[path] = e
            return e
        }
    }

    private let path: String
    private let lock = NSRecursiveLock()
    private var fd: Int32 = -1
    private var depth = 0

    private init(path: String) { self.path = path }

    func run<T>(_ body: () throws -> T) throws -> T {
        lock.lock()
        defer { lock.unlock() }
        if depth == 0 {
            let f = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
            guard f >= 0 else { throw SystemCall.error("open", path: path) }
            while flock(f, LOCK_EX) != 0 {
                if errno != EINTR { close(f); throw SystemCall.error("flock", path: path) }
            }
            fd = f
        }
        depth += 1
        defer {
            depth -= 1
            if depth == 0 {
                flock(fd, LOCK_UN)
                close(fd)
                fd = -1
            }
        }
        return try body()
    }
}
