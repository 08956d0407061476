import BacklotBasics
import BacklotCrypto
import BacklotFormat
import Dispatch
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

    /// Runs `body` (which builds the bases' deltas on a pool of its own) on ``BlockingPool/longRunning``, counted by
    /// ``wait()``: never on Dispatch's global queue, whose few threads the waiting caller may hold.
    func start(_ body: @escaping @Sendable (DeltaBuilds) -> Void) {
        BlockingPool.longRunning.submit(countedBy: done) { [self] in
            body(self)
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
