import CLinuxSupport
import Dispatch
import Foundation
import Synchronization

/// The one bridge between Swift concurrency and blocking work — a transfer, file I/O and its
/// `fsync`, a child process, a SQLite transaction that may wait for a lock — modelled on
/// swift-nio's `NIOThreadPool`: a fixed number of threads of its own and a queue. Blocking work
/// never runs on Swift's cooperative pool, which a blocked thread would starve; the caller's task
/// is suspended meanwhile (``run(_:)``). Work still queued when its task is cancelled never starts
/// and ``run(_:)`` throws `CancellationError`; work that has started runs to its end (blocking
/// work checks its own cancellation, as the installer's `isCancelled` does).
///
/// Backlot's cores are blocking and synchronous; their async façades (`AssetPackManager`, the
/// agent) cross to them through ``shared``, and the HTTP server owns an instance for the work its
/// requests wait for, submitted from its C callbacks (``submit(_:)``). The other direction, async
/// work awaited by synchronous code (the command line, libbacklot's C calls), is
/// ``waitForAsync(polling:every:_:)``.
///
/// ```swift
/// let catalog = try await BlockingPool.shared.run { try client.fetch() }
///
/// let pool = BlockingPool(threads: 4, name: "backlot-work")
/// if !pool.submit({ print("on a pool thread") }) { print("stopped: run it yourself") }
/// pool.stop()  // runs what was submitted, then ends the threads
/// ```
public final class BlockingPool: Sendable {
    private struct Queue {
        var jobs: [@Sendable () -> Void] = []
        var next = 0
        var stopped = false
    }

    /// How many threads run the work; nil for ``unbounded`` (a thread per job).
    public let threads: Int?
    /// The threads' name prefix (Linux keeps 15 bytes of a thread's name).
    public let name: String
    private let queue = Mutex(Queue())
    /// Counts the jobs queued (plus one wake-up per thread at ``stop()``).
    private let available = DispatchSemaphore(value: 0)
    /// Entered by every thread while it runs.
    private let running = DispatchGroup()

    /// The process's pool for blocking work: `max(2, cores)` threads, started on first use and
    /// never stopped. At most that many bodies run at once; the rest wait in its queue.
    public static let shared = BlockingPool(
        threads: max(2, ProcessInfo.processInfo.activeProcessorCount), name: "backlot-pool")

    /// A thread per job, without a bound, for work that blocks for a very long time by design: a
    /// pack's download and install (a transfer of gigabytes at `HTTPClient`'s minimum rate, after
    /// waiting for another process's install of the same pack to end) and its download workers, a
    /// URL download promoted to the foreground, an extension's call, the agent's waits, the
    /// server's processing workers. Queued on ``shared``, a few of them would hold every thread
    /// for hours and leave a catalog fetch or an extension call waiting behind them. Their number
    /// is bounded by their callers: a container has one executor of downloads, an install holds
    /// the pack's lock, an install has `PackInstaller`'s connections, the server's processing
    /// scheduler its workers.
    public static let unbounded = BlockingPool(name: "backlot-long")

    /// Starts `threads` threads (at least one) named `name1`, `name2`, …
    public init(threads: Int, name: String = "backlot-pool") {
        let count = max(1, threads)
        self.threads = count
        self.name = name
        for index in 0..<count {
            running.enter()
            let threadName = "\(name)\(index + 1)"
            let thread = Thread { [self] in
                clinux_name_this_thread(threadName)  // Foundation's `Thread.name` leaves the kernel's name alone
                work()
            }
            thread.start()
        }
    }

    private init(name: String) {
        threads = nil
        self.name = name
    }

    /// Queues `job` for a thread of the pool (or, for ``unbounded``, starts one for it); false —
    /// and nothing queued — once ``stop()`` has begun, so that the caller can run it itself.
    @discardableResult
    public func submit(_ job: @escaping @Sendable () -> Void) -> Bool {
        let queued = queue.withLock { q -> Bool in
            guard !q.stopped else { return false }
            if threads != nil { q.jobs.append(job) }
            return true
        }
        guard queued else { return false }
        if threads == nil {
            running.enter()
            let thread = Thread { [running, name] in
                clinux_name_this_thread(name)
                job()
                running.leave()
            }
            thread.start()
        } else {
            available.signal()
        }
        return true
    }

    /// Refuses new jobs, lets the threads run every job already queued, and returns when they
    /// have ended. Never call it from a job of the same pool (it would wait for itself).
    public func stop() {
        let first = queue.withLock { q -> Bool in
            defer { q.stopped = true }
            return !q.stopped
        }
        if first, let threads { for _ in 0..<threads { available.signal() } }
        running.wait()
    }

    private func work() {
        defer { running.leave() }
        while true {
            available.wait()
            let job = queue.withLock { q -> (@Sendable () -> Void)? in
                guard q.next < q.jobs.count else { return nil }
                let job = q.jobs[q.next]
                q.next += 1
                if q.next == q.jobs.count {
                    q.jobs.removeAll(keepingCapacity: true)
                    q.next = 0
                }
                return job
            }
            if let job {
                job()
                continue
            }
            // Woken with nothing queued: only ever by stop(), once every queued job was taken.
            if queue.withLock({ $0.stopped }) { return }
        }
    }
}
