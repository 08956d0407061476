import BacklotBasics
import BacklotClient
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
        (try? ClientContainer(path: containerPath))?.isAgentRunning ?? false
    }

    /// Takes the lock, or returns nil when another process holds it.
    public static func acquire(containerPath: String) throws -> AgentLock? {
        try FileManager.default.createDirectory(atPath: containerPath, withIntermediateDirectories: true)
        let path = containerPath + "/.agent.lock"
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw SystemCall.error("open", path: path) }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            close(fd)
            return nil
        }
        return AgentLock(fd: fd)
    }
}
