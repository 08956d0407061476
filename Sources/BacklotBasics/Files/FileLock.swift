import CLinuxSupport
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A lock on a file that processes take in turns: shared or exclusive, waited for or not, held
/// until ``release()`` or until the value goes away. The only place Backlot takes a file lock.
///
/// The locks are Linux's open file description locks (`fcntl` `F_OFD_*`): like `flock`, a lock
/// belongs to the open file (two opens in one process exclude each other too) and ends when it is
/// closed, also when the process dies; unlike `flock`, whether a lock is held can be asked
/// without taking it (``isHeld(_:)``), so a status probe never makes a concurrent taker fail.
/// The lock file is created (0600) when needed and never removed, so every process locks the
/// same inode.
///
/// ```swift
/// guard let lock = try FileLock.acquire(container + "/.agent.lock", .exclusive, waiting: false) else { … held elsewhere … }
/// defer { lock.release() }
/// try FileLock.holding(container + "/.executor.lock") { … one process at a time … }
/// ```
public final class FileLock: Sendable {
    /// A shared lock lets other shared locks in; an exclusive one lets nothing in.
    public enum Kind: Sendable {
        case shared, exclusive
    }

    /// The lock file.
    public let path: String
    public let kind: Kind
    private let descriptor: Mutex<Int32>

    private init(path: String, kind: Kind, descriptor: Int32) {
        self.path = path
        self.kind = kind
        self.descriptor = Mutex(descriptor)
    }

    /// Takes the lock on `path`, creating the file if needed.
    /// - Parameter waiting: true to wait until it is granted (the result is then never nil);
    ///   false to return nil at once when another open file holds a conflicting lock.
    /// - Throws: ``BacklotError/Code/io`` when the lock file cannot be created or opened, or the
    ///   lock cannot be taken for another reason than being held.
    public static func acquire(_ path: String, _ kind: Kind = .exclusive, waiting: Bool) throws -> FileLock? {
        let fd = try SystemCall.retrying("open the lock file", path: path) {
            open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        }
        while clinux_ofd_lock(fd, kind == .exclusive ? 1 : 0, waiting ? 1 : 0) != 0 {
            let err = errno
            if err == EINTR { continue }
            close(fd)
            if !waiting && (err == EAGAIN || err == EACCES) { return nil }
            throw SystemCall.error("lock", path: path, errno: err)
        }
        return FileLock(path: path, kind: kind, descriptor: fd)
    }

    /// Runs `body` holding the lock on `path` (waiting for it), and releases it after.
    public static func holding<T>(_ path: String, _ kind: Kind = .exclusive, _ body: () throws -> T) throws -> T {
        guard let lock = try acquire(path, kind, waiting: true) else {
            preconditionFailure("a waited-for lock is always granted")
        }
        defer { lock.release() }
        return try body()
    }

    /// Whether another open file holds a lock on `path` (of either kind), asked without taking
    /// one. A lock file that does not exist is not held. The answer may be stale at once: take
    /// the lock to decide.
    public static func isHeld(_ path: String) -> Bool {
        let fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return clinux_ofd_conflicts(fd, 1) == 1
    }

    /// Releases the lock (closing its file). Safe to call more than once.
    public func release() {
        descriptor.withLock { fd in
            guard fd >= 0 else { return }
            _ = clinux_ofd_unlock(fd)
            close(fd)
            fd = -1
        }
    }

    deinit { release() }
}
