import BacklotBasics
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The lock of a data folder (`DIR/.lock`): one process at a time writes a repository —
/// `backlot serve` for as long as it runs, `backlot catalog resign` and `backlot keys rotate` while
/// they work. A second one stops at once with an error naming the folder and the lock.
///
/// ```swift
/// let lock = try RepositoryLock.acquire(dataFolder: "data", for: "backlot serve")
/// defer { lock.release() }
/// ```
public enum RepositoryLock {
    /// The lock file of a data folder.
    public static func path(dataFolder: String) -> String {
        URL(fileURLWithPath: dataFolder).standardizedFileURL.path + "/.lock"
    }

    /// Creates the data folder if needed (mode 0711: reachable for the published tree, not
    /// listable) and takes its lock.
    /// - Throws: ``BacklotError/Code/locked`` when another process holds it (exit status 1).
    public static func acquire(dataFolder: String, for purpose: String) throws -> FileLock {
        let folder = URL(fileURLWithPath: dataFolder).standardizedFileURL.path
        if !FileSystem.exists(folder) {
            try FileSystem.makeDirectories(folder)
            chmod(folder, 0o711)
        }
        let lockPath = path(dataFolder: folder)
        guard let lock = try FileLock.acquire(lockPath, .exclusive, waiting: false) else {
            throw BacklotError(
                .locked, "the data folder \(folder) is in use by another process (it holds \(lockPath))",
                context: purpose,
                hint: "one backlot serve per data folder: stop the other one first (or give this one another --data)")
        }
        return lock
    }
}

extension BacklotError.Code {
    /// A data folder's lock is held by another process (exit status 1).
    public static let locked = BacklotError.Code("locked", isInvalidInput: false)
}
