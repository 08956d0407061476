import BacklotCrypto
import Dispatch
import Synchronization

/// A shared counter that hands out work indexes to threads.
final class AtomicCounter: Sendable {
    private let value = Atomic<Int>(0)
    /// Returns the current value and adds one.
    func increment() -> Int { value.wrappingAdd(1, ordering: .relaxed).oldValue }
    /// Adds `n` and returns the new value.
    func valueAdd(_ n: Int) -> Int { value.wrappingAdd(n, ordering: .relaxed).newValue }
}

/// Per-index results written by worker threads; each index is written by exactly one thread and
/// read (or taken, which writes it: by one thread) only after all writers have finished.
// Safe because: each index is written by exactly one worker and read only after the workers are done
// (`concurrentPerform` returned, or their `DispatchGroup` was waited for, before the readers were started), which
// orders every write before the reads; `take` of an index is by one thread; the storage is freed in `deinit`,
// after the last reader
// (`IndexedResultsTests.workerThreadsWriteTheirIndicesAndEveryResultIsReadAfter`).
final class IndexedResults<Element>: @unchecked Sendable {
    private let storage: UnsafeMutableBufferPointer<Element?>

    init(count: Int) {
        storage = .allocate(capacity: count)
        storage.initialize(repeating: nil)
    }

    deinit {
        storage.deinitialize()
        storage.deallocate()
    }

    func set(_ i: Int, _ item: Element) { storage[i] = item }
    func get(_ i: Int) -> Element { storage[i]! }
    /// The result at `i`, moved out (what it holds is freed with the caller's copy).
    func take(_ i: Int) -> Element { storage[i].take()! }
    /// The result at `i` moved out, or nil if none was set.
    func takeIfSet(_ i: Int) -> Element? { storage[i].take() }
}

/// One chunk hashed (and compressed, unless already stored) by a worker thread.
struct ChunkResult {
    let id: SHA256Digest
    let compressed: [UInt8]?
    let error: (any Error)?
}

/// The chunk results of one batch of ``PackWriter``.
typealias ParallelResults = IndexedResults<ChunkResult>

extension AtomicCounter {
    /// Adds `n` and returns the new value.
    func add(_ n: Int) -> Int { valueAdd(n) }
}

/// Keeps the failure with the lowest work index, so parallel runs report deterministically.
final class FirstFailure: Sendable {
    private let state = Mutex<(index: Int, error: (any Error)?)>((Int.max, nil))
    private let flag = Atomic<Bool>(false)

    var hasFailure: Bool { flag.load(ordering: .relaxed) }

    func record(_ index: Int, _ error: any Error) {
        state.withLock { s in
            if index < s.index { s = (index, error) }
        }
        flag.store(true, ordering: .relaxed)
    }

    var first: (any Error)? { state.withLock { $0.error } }
}

/// Runs the same body on `jobs` threads and waits for all of them.
enum DispatchQueueRunner {
    static func run(jobs: Int, _ body: @Sendable () -> Void) {
        DispatchQueue.concurrentPerform(iterations: max(1, jobs)) { _ in body() }
    }

    /// Runs `body` once for each index below `count`, on as many threads as there are cores
    /// (the caller's among them), and waits for all of them.
    static func forEach(count: Int, _ body: @Sendable (Int) -> Void) {
        if count == 1 { return body(0) }
        DispatchQueue.concurrentPerform(iterations: count, execute: body)
    }
}
