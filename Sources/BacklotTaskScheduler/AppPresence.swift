import BacklotBasics
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Whether the app runs: the app holds a shared lock on `CONTAINER/.app.lock` for as long as it
/// runs, and the agent launches it in the background for a due task only when nobody holds it.
///
/// ```swift
/// let presence = try AppPresence.markRunning(containerPath: container)   // at launch; kept until exit
/// ```
public final class AppPresence: Sendable {
    let fd: Int32

    init(fd: Int32) { self.fd = fd }

    deinit { close(fd) }

    static func lockPath(_ container: String) -> String { container + "/.app.lock" }

    /// Marks the app as running until the returned value is released (or the process ends), and
    /// records the launch for the agent's periodic checks (a launch by the agent for a background
    /// task does not count as use).
    public static func markRunning(containerPath: String,
                                   countsAsLaunch: Bool = TaskScheduler.backgroundLaunchIdentifier == nil) throws -> AppPresence {
        if countsAsLaunch { try TaskStore(path: containerPath + "/tasks.sqlite").recordLaunch(at: Date()) }
        let path = lockPath(containerPath)
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw SystemCall.error("open", path: path) }
        while flock(fd, LOCK_SH) != 0 {
            if errno != EINTR { close(fd); throw SystemCall.error("flock", path: path) }
        }
        return AppPresence(fd: fd)
    }

    /// Whether a process of the app holds the lock now.
    public static func isRunning(containerPath: String) -> Bool { FileLock.isHeld(lockPath(containerPath)) }
}
