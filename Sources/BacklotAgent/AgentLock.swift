import BacklotBasics
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// One agent per container: `backlot agent` holds `CONTAINER/.agent.lock` while it runs, and
/// `notify`/`simulate` run an event themselves only when nobody holds it.
public final class AgentLock: Sendable {
    let fd: Int32

    init(fd: Int32) { self.fd = fd }

    deinit {
        flock(fd, LOCK_UN)
        close(fd)
    }

    /// Whether an agent runs for the container now.
    public static func isHeld(containerPath: String) -> Bool {
        FileLock.isHeld(containerPath + "/.agent.lock")
    }

    /// Takes the lock, or returns nil when another process holds it.
    public static func acquire(containerPath: String) throws -> AgentLock? {
        try FileManager.default.createDirectory(atPath: containerPath, withIntermediateDirectories: true)
        let path = containerPath + "/.agent.lock"
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw SystemCall.error("open", path: path) }
        // A few tries: another process may be holding it for an instant to ask whether an agent runs.
        for attempt in 0..<25 {
            if flock(fd, LOCK_EX | LOCK_NB) == 0 { return AgentLock(fd: fd) }
            if attempt < 24 { usleep(20_000) }
        }
        close(fd)
        return nil
    }
}
