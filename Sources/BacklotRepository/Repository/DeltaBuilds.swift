import BacklotCrypto
import BacklotFormat
import Dispatch
import Foundation
import Synchronization

/// The deltas into one version, built on threads of their own while the version is checked:
/// the check (``UploadedPackCheck``) runs on one thread, the deltas take the other cores. Nothing
/// they make is visible until the check has passed and ``Publication/publishDeltas(_:)`` writes
/// them; a failed check cancels them (``cancel()``), and ``wait()`` returns once every build has
/// stopped and closed its readers.
///
/// ```swift
/// let builds = publication.startDeltas(app: "Game", pack: "Levels", number: 4, archive: sha) { try open() }
/// do {
///     try check()
/// } catch {
///     builds?.cancel()
///     _ = builds?.wait()
///     throw error
/// }
/// publication.publishDeltas(builds)  // waits for them, writes them, logs what failed
/// ```
final class DeltaBuilds: Sendable {
    /// One base's delta.
    struct Built: Sendable {
        let base: SHA256Digest
        let result: DeltaBuilder.Result
    }

    /// What the builds left: each base's delta by the base's place (0 is the newest), and the
    /// first error (a delta is an optimisation: the caller logs it).
    struct Outcome: Sendable {
        var built: [Int: Built] = [:]
        var targetDigest: SHA256Digest?
        var error: (any Error)?
    }

    let app: String
    let pack: String
    let number: Int64
    let started = ContinuousClock.now
    private let cancelled = Atomic<Bool>(false)
    private let outcome = Mutex(Outcome())
    private let nextJob = Mutex(0)
    private let done = DispatchGroup()

    init(app: String, pack: String, number: Int64) {
        self.app = app
        self.pack = pack
        self.number = number
    }

    /// Whether ``cancel()`` was called (each build looks before every file of the target).
    var isCancelled: Bool { cancelled.load(ordering: .relaxed) }

    /// Asks the builds to stop; ``wait()`` still waits for them.
    func cancel() { cancelled.store(true, ordering: .relaxed) }

    /// Runs `body` on a thread of the system's pool, counted by ``wait()``.
    func start(_ body: @escaping @Sendable (DeltaBuilds) -> Void) {
        DispatchQueue.global().async(group: done) { [self] in body(self) }
    }

    /// Runs `body(k)` for each `k` in `0..<jobs` on `workers` threads of their own, each taking
    /// the next `k` when it is done with one, all counted by ``wait()``. Threads, not
    /// `concurrentPerform`: the check holds one of the system pool's threads, and the pool, sized
    /// to the cores, then ran the builds one after another (measured: 2.9 s for three bases).
    func run(jobs: Int, workers: Int, _ body: @escaping @Sendable (Int) -> Void) {
        for _ in 0..<max(1, min(workers, jobs)) {
            done.enter()
            Thread.detachNewThread { [self] in
                defer { done.leave() }
                while true {
                    let k = nextJob.withLock { k -> Int in
                        defer { k += 1 }
                        return k
                    }
                    guard k < jobs else { return }
                    body(k)
                }
            }
        }
    }

    /// Records what a build made or the error it met.
    func record(_ update: (inout Outcome) -> Void) { outcome.withLock { update(&$0) } }

    /// Waits for every build to end and returns what they made.
    func wait() -> Outcome {
        done.wait()
        return outcome.withLock { $0 }
    }
}
