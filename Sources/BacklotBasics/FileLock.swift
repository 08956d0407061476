#if canImport(Glibc)
import Glibc
#endif

/// Asks whether another process holds a `flock` on a lock file, without keeping any lock: the
/// probe takes an exclusive lock without waiting and releases it at once. A lock file that does
/// not exist is not held.
///
/// ```swift
/// if FileLock.isHeld(container + "/.agent.lock") { … }
/// ```
public enum FileLock {
    public static func isHeld(_ path: String) -> Bool {
        let fd = open(path, O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else { return true }
        flock(fd, LOCK_UN)
        return false
    }
}
