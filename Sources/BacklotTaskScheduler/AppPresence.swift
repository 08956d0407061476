import BacklotBasics
import BacklotContainer
import Foundation

/// Whether the app runs: the app holds the shared ``ContainerLock/appPresence`` for as long as it
/// runs, and the agent launches it in the background for a due task only when nobody holds it.
///
/// ```swift
/// let presence = try AppPresence.markRunning(containerPath: container)   // at launch; kept until exit
/// ```
public final class AppPresence: Sendable {
    let lock: FileLock

    init(lock: FileLock) { self.lock = lock }

    /// Marks the app as running until the returned value is released (or the process ends), and
    /// records the launch for the agent's periodic checks (a launch by the agent for a background
    /// task does not count as use).
    public static func markRunning(
        containerPath: String,
        countsAsLaunch: Bool = TaskScheduler.backgroundLaunchIdentifier == nil
    ) throws -> AppPresence {
        let layout = ContainerLayout(root: containerPath)
        // an app's first start
        try FileSystem.makeDirectories(containerPath)
        if countsAsLaunch { try TaskStore(path: layout.tasksDatabase).recordLaunch(at: Date()) }
        guard let lock = try layout.acquire(.appPresence, waiting: true) else {
            preconditionFailure("a waited-for lock is always granted")
        }
        return AppPresence(lock: lock)
    }

    /// Whether a process of the app holds the lock now (asked without taking it).
    public static func isRunning(containerPath: String) -> Bool {
        ContainerLayout(root: containerPath).isHeld(.appPresence)
    }
}
