import BacklotBasics
import BacklotContainer
import Foundation

/// One agent per container: `backlot agent` (or a `notify` acting as the agent) holds the
/// container's ``ContainerLock/agent`` while it runs. Whether an agent runs is decided by trying to
/// take it (``tryAcquire(containerPath:)``): whoever holds it runs every queued event before it
/// lets go (``Agent/runUntilQueueSettles()``), so an event queued before a failed try is run by
/// the holder. Asking whether it is held (``isHeld(containerPath:)``) never takes it, so a status
/// probe never makes a try fail.
public final class AgentLock: Sendable {
    private let lock: FileLock

    init(lock: FileLock) { self.lock = lock }

    /// Lets go of the lock (at most once).
    public func release() { lock.release() }

    /// Whether an agent runs for the container now: a probe, for status displays only (its answer
    /// may be stale at once; decisions take the lock instead).
    public static func isHeld(containerPath: String) -> Bool {
        ContainerLayout(root: containerPath).isHeld(.agent)
    }

    /// Takes the lock without waiting, or returns nil when another process holds it.
    /// - Throws: ``BacklotError/Code/io`` when the container or its lock file cannot be created.
    public static func tryAcquire(containerPath: String) throws -> AgentLock? {
        try FileSystem.makeDirectories(containerPath)
        return try ContainerLayout(root: containerPath).acquire(.agent, waiting: false).map(AgentLock.init(lock:))
    }
}
