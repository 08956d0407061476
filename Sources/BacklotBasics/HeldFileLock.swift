#if canImport(Glibc)
import Glibc
#endif

/// An exclusive `flock` held for as long as this object lives (or until ``release()``): one
/// process at a time owns whatever the lock file guards. The lock file is created (0600) if
/// needed and never removed, so two processes always lock the same inode.
///
/// ```swift
/// guard let lock = try HeldFileLock.acquire(dataFolder + "/.lock") else { … another process holds it … }
/// defer { lock.release() }
/// ```
public final class HeldFileLock: @unchecked Sendable {
    /// The lock file.
    public let path: String
    private var fd: Int32

    private init(path: String, fd: Int32) {
        self.path = path
        self.fd = fd
    }

    /// Takes the lock without waiting.
    /// - Returns: the held lock, or nil when another open file (another process) holds it.
    /// - Throws: ``BacklotError/Code/io`` when the lock file cannot be created or opened.
    public static func acquire(_ path: String) throws -> HeldFileLock? {
        let fd = try SystemCall.retrying("open the lock file", path: path) { open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600) }
        fchmod(fd, 0o600)
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let err = errno
            if err == EINTR { continue }
            close(fd)
            if err == EWOULDBLOCK { return nil }
            throw SystemCall.error("lock", path: path, errno: err)
        }
        return HeldFileLock(path: path, fd: fd)
    }

    /// Releases the lock (closing its descriptor). Safe to call more than once.
    public func release() {
        guard fd >= 0 else { return }
        close(fd)
        fd = -1
    }

    deinit { release() }
}
