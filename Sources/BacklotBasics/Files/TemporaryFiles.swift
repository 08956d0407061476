import Foundation
import Synchronization

/// Temporary files and folders that must not survive an interrupted command.
///
/// Writers register what they create; the command-line tool removes whatever is still registered
/// when it receives SIGINT or SIGTERM, so an interrupted `package` or `extract` leaves nothing behind.
public final class TemporaryFiles: Sendable {
    /// The process-wide registry.
    public static let shared = TemporaryFiles()
    private let paths = Mutex<Set<String>>([])

    public func register(_ path: String) { paths.withLock { _ = $0.insert(path) } }
    public func unregister(_ path: String) { paths.withLock { _ = $0.remove(path) } }

    /// Removes everything registered (files and folders).
    public func removeAll() {
        let all = paths.withLock { p in
            defer { p.removeAll() }
            return p
        }
        for p in all { FileSystem.removeTree(p) }
    }
}
