import BacklotBasics
import Foundation

/// The locks the processes of a container take, named once, over ``FileLock``.
///
/// | lock | kind | held by | for |
/// |---|---|---|---|
/// | ``executor`` | exclusive | the process that runs the container's install requests | one executor at a time |
/// | ``install(pack:)`` | exclusive | a process installing that pack | two processes asking for a pack download it once |
/// | ``agent`` | exclusive | `backlot agent` (or a `notify` acting as the agent) | one agent per container |
/// | ``exclusiveControl`` | exclusive | short sections that move URL downloads between processes | Apple's exclusive control |
/// | ``appPresence`` | shared | every process of the running app | the agent launches the app only when it is not running |
/// | ``appListening`` | shared | an app that receives URL download outcomes | the agent hands outcomes to it rather than to the extension |
/// | ``download(_:)`` | exclusive | the process writing a URL download's partial file | one writer per partial file |
/// | ``report`` | exclusive | a process sending the device's report | a device reports its day once, whichever process sends it |
///
/// ```swift
/// let layout = ContainerLayout(root: container)
/// guard let agent = try layout.acquire(.agent, waiting: false) else { … an agent runs … }
/// try layout.holding(.install(pack: "Levels")) { … }
/// ```
public enum ContainerLock: Sendable, Hashable {
    case executor
    case install(pack: String)
    case agent
    case exclusiveControl
    case appPresence
    case appListening
    case download(String)
    case report

    /// How the lock is taken.
    public var kind: FileLock.Kind {
        switch self {
        case .appPresence, .appListening: .shared
        default: .exclusive
        }
    }

    /// The lock file in `layout`.
    public func path(in layout: ContainerLayout) -> String {
        switch self {
        case .executor: layout.root + "/.executor.lock"
        case .install(let pack): layout.root + "/.executor-" + ContainerLayout.digestName(pack, 16) + ".lock"
        case .agent: layout.root + "/.agent.lock"
        case .exclusiveControl: layout.root + "/.exclusive.lock"
        case .appPresence: layout.root + "/.app.lock"
        case .appListening: layout.root + "/.app-listening.lock"
        case .report: layout.root + "/.report.lock"
        case .download(let identifier):
            layout.downloadLocksFolder + "/" + ContainerLayout.digestName(identifier, 32) + ".lock"
        }
    }
}

extension ContainerLayout {
    /// Takes `lock` (creating its folder when needed).
    /// - Parameter waiting: wait until it is granted (never nil then), or nil at once when it is held.
    /// - Throws: ``BacklotError/Code/io`` when the lock file cannot be created or opened.
    public func acquire(_ lock: ContainerLock, waiting: Bool) throws -> FileLock? {
        let path = lock.path(in: self)
        if case .download = lock {
            try FileSystem.makeDirectories(downloadLocksFolder)
        }
        return try FileLock.acquire(path, lock.kind, waiting: waiting)
    }

    /// Runs `body` holding `lock` (waiting for it).
    public func holding<T>(_ lock: ContainerLock, _ body: () throws -> T) throws -> T {
        guard let held = try acquire(lock, waiting: true) else {
            preconditionFailure("a waited-for lock is always granted")
        }
        defer { held.release() }
        return try body()
    }

    /// Whether another process holds `lock`, asked without taking it (for decisions that can be
    /// stale, such as a status line; decide by taking the lock).
    public func isHeld(_ lock: ContainerLock) -> Bool { FileLock.isHeld(lock.path(in: self)) }
}
