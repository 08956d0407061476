import BacklotBasics
import BacklotContainer
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The container's cross-process exclusive lock (``ContainerLock/exclusiveControl``), re-entrant
/// within a process: a handler that runs under it may take it again (to move a file, to stop
/// listening) without deadlocking, and threads of one process take turns.
final class ExclusiveControl: Sendable {
    private static let registry = Mutex<[String: ExclusiveControl]>([:])

    /// The one instance for a container in this process.
    static func of(container path: String) -> ExclusiveControl {
        registry.withLock { r in
            if let e = r[path] { return e }
            let e = ExclusiveControl(layout: ContainerLayout(root: path))
            r[path] = e
            return e
        }
    }

    private let layout: ContainerLayout
    /// Held by the thread that holds the file lock, for as long as it does: other threads wait here.
    private let turn = Mutex<FileLock?>(nil)
    /// Which thread holds the turn, and how deep it went in: the same thread may enter again.
    private let owner = Mutex<(thread: pthread_t, depth: Int)?>(nil)

    private init(layout: ContainerLayout) { self.layout = layout }

    func run<T>(_ body: () throws -> T) throws -> T {
        if let again = reentered(body) { return try again.get() }
        var result: Result<T, any Error>?
        try turn.withLock { held in
            result = holding(try layout.acquire(.exclusiveControl, waiting: true), in: &held, body)
        }
        return try result!.get()
    }

    /// Like ``run(_:)``, giving up at `deadline` (a deadline now or past makes one attempt).
    /// - Returns: nil when the lock was not acquired in time, else what `body` returned.
    func run<T>(before deadline: Date, _ body: () throws -> T) throws -> T? {
        if let again = reentered(body) { return try again.get() }
        while true {
            var result: Result<T, any Error>?
            try turn.withLockIfAvailable { held in
                guard let lock = try layout.acquire(.exclusiveControl, waiting: false) else { return }
                result = holding(lock, in: &held, body)
            }
            if let result { return try result.get() }
            if Date() >= deadline { return nil }
            usleep(5_000)
        }
    }

    /// Whether the calling thread holds the control now (it runs inside ``run(_:)``'s body).
    var isHeldByCurrentThread: Bool {
        owner.withLock { o in o.map { pthread_equal($0.thread, pthread_self()) != 0 } ?? false }
    }

    /// `body`'s outcome when this thread holds the control already (a handler calling again), or
    /// nil when it does not.
    private func reentered<T>(_ body: () throws -> T) -> Result<T, any Error>? {
        let me = pthread_self()
        let again = owner.withLock { o -> Bool in
            guard let current = o, pthread_equal(current.thread, me) != 0 else { return false }
            o = (me, current.depth + 1)
            return true
        }
        guard again else { return nil }
        defer { owner.withLock { o in o = o.map { ($0.thread, $0.depth - 1) } } }
        return Result { try body() }
    }

    /// Runs `body` holding `lock` (kept in `held` meanwhile, with this thread as the owner), then releases it.
    private func holding<T>(_ lock: FileLock?, in held: inout FileLock?, _ body: () throws -> T) -> Result<T, any Error>
    {
        held = lock
        owner.withLock { $0 = (pthread_self(), 1) }
        defer {
            owner.withLock { $0 = nil }
            held?.release()
            held = nil
        }
        return Result { try body() }
    }
}
