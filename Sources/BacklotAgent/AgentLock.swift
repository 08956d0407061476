import BacklotBasics
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// One agent per container: `backlot agent` (or a `notify` acting as the agent) holds
/// `CONTAINER/.agent.lock` while it runs. Whether an agent runs is decided by trying to take it
/// (``tryAcquire(containerPath:)``): whoever holds it runs every queued event before it lets go
/// (``Agent/runUntilQueueSettles()``), so an event queued before a failed try is run by the holder.
public final class AgentLock: Sendable {
    private let fd: Mutex<Int32?>

    init(fd: Int32) { self.fd = Mutex(fd) }

    deinit { release() }

    /// Lets go of the lock (at most once).
    public func release() {
        fd.withLock { fd in
            guard let f = fd else { return }
            flock(f, LOCK_UN)
            close(f)
            fd = nil
        }
    }

    /// Whether an agent runs for the container now: a probe, for status displays only (its answer
    /// may be stale at once; decisions take the lock instead).
    public static func isHeld(containerPath: String) -> Bool {
        FileLock.isHeld(containerPath + "/.agent.lock")
    }

    /// Takes the lock, or returns nil when another process holds it. A few tries: another process
    /// may be holding it for an instant to ask whether an agent runs (``isHeld(containerPath:)``).
    public static func acquire(containerPath: String) throws -> AgentLock? {
        for attempt in 0..<25 {
            if let lock = try tryAcquire(containerPath: containerPath) { return lock }
            if attempt < 24 { usleep(20_000) }
        }
        return nil
    }

    /// Takes the lock without waiting, or returns nil when another process holds it.
    public static func tryAcquire(containerPath: String) throws -> AgentLock? {
        try FileManager.default.createDirectory(atPath: containerPath, withIntermediateDirectories: true)
        let path = containerPath + "/.agent.lock"
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw SystemCall.error("open", path: path) }
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            if errno == EINTR { continue }
            close(fd)
            return nil
        }
        return AgentLock(fd: fd)
    }
}
