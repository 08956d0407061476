import CLinuxSupport
import Dispatch
import Foundation
import Synchronization

/// The one bridge between Swift concurrency and blocking work — a transfer, file I/O and its
/// `fsync`, a child process, a SQLite transaction that may wait for a lock — modelled on
/// swift-nio's `NIOThreadPool`: a bounded number of threads of its own and a queue. Blocking work
/// never runs on Swift's cooperative pool, which a blocked thread would starve; the caller's task
/// is suspended meanwhile (``run(_:)``). Work still queued when its task is cancelled never starts
/// and ``run(_:)`` throws `CancellationError`; work that has started runs to its end (blocking
/// work checks its own cancellation, as the installer's `isCancelled` does).
///
/// Backlot's cores are blocking and synchronous; their async façades (`AssetPackManager`, the
/// agent) cross to them through ``shared`` (short work) and ``longRunning`` (work that blocks for
/// hours: a transfer, a wait), and the HTTP server owns an instance for the work its
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
        /// Threads alive, and of those, running a job.
        var started = 0
        var busy = 0

        var pending: Int { jobs.count - next }
    }

    /// The most threads that run the work at once. A pool made with ``init(threads:name:)`` starts
    /// them all at once and keeps them; one made with ``init(upTo:name:idleSeconds:)`` starts them
    /// as work arrives and ends those idle for a while.
    public let threads: Int
    /// The threads' name prefix (Linux keeps 15 bytes of a thread's name).
    public let name: String
    /// Seconds an idle thread of a growing pool waits for work before it ends; nil: never ends.
    private let idleSeconds: Double?
    private let queue = Mutex(Queue())
    /// Counts the jobs queued (plus one wake-up per thread at ``stop()``).
    private let available = DispatchSemaphore(value: 0)
    /// Entered by every thread while it runs.
    private let running = DispatchGroup()

    /// The process's pool for short blocking work: `max(2, cores)` threads, started on first use
    /// and never stopped. At most that many bodies run at once; the rest wait in its queue.
    public static let shared = BlockingPool(
        threads: max(2, ProcessInfo.processInfo.activeProcessorCount), name: "backlot-pool")

    /// The pool for work that blocks for a very long time by design: a pack's download and install
    /// (a transfer of gigabytes at `HTTPClient`'s minimum rate, after waiting for another
    /// process's install of the same pack to end) and its download workers, a URL download
    /// promoted to the foreground, an extension's call, the agent's waits, the server's
    /// processing workers and delta builds. Queued on ``shared``, a few of them would hold every
    /// thread for hours and leave a catalog fetch or an extension call waiting behind them.
    ///
    /// It starts a thread whenever a job finds none free, up to ``longRunningLimit`` threads, and
    /// ends a thread idle for 10 s. Its callers bound how many jobs they give it (a container has
    /// one executor of downloads, an install holds the pack's lock and has `PackInstaller`'s
    /// connections, the server's processing scheduler its workers: `backlot fleet` with 48 devices
    /// at work at once peaked at 236 threads in all), so the limit is not reached in use; it is
    /// what a runaway caller meets instead of exhausting the process's threads. Past it, jobs wait
    /// in the queue — except a job submitted from one of the pool's own threads (an install's
    /// download workers, which the install waits for): it gets a thread of its own at once, so a
    /// full pool of waiting jobs cannot wait for good on work queued behind them.
    public static let longRunning = BlockingPool(upTo: longRunningLimit, name: "backlot-long", idleSeconds: 10)
    /// The most threads of ``longRunning``.
    public static let longRunningLimit = 1024

    /// Starts `threads` threads (at least one) named `name1`, `name2`, …, kept until ``stop()``.
    public init(threads: Int, name: String = "backlot-pool") {
        let count = max(1, threads)
        self.threads = count
        self.name = name
        idleSeconds = nil
        queue.withLock { $0.started = count }
        for index in 0..<count { startThread(named: "\(name)\(index + 1)") }
    }

    /// A pool that starts a thread (named `name`) whenever a job finds none free, up to `maximum`
    /// (at least one), and ends a thread that waited `idleSeconds` for a job in vain.
    public init(upTo maximum: Int, name: String, idleSeconds: Double) {
        threads = max(1, maximum)
        self.name = name
        self.idleSeconds = max(0.01, idleSeconds)
    }

    private func startThread(named threadName: String, only job: (@Sendable () -> Void)? = nil) {
        running.enter()
        let thread = Thread { [self] in
            clinux_name_this_thread(threadName)  // Foundation's `Thread.name` leaves the kernel's name alone
            Thread.current.threadDictionary[Self.poolKey] = ObjectIdentifier(self)
            if let job {
                job()
                running.leave()
            } else {
                work()
            }
        }
        thread.start()
    }

    /// Threads alive and not running a job: those a job submitted now would find free.
    public var freeThreads: Int { queue.withLock { $0.started - $0.busy } }

    /// Where a pool's thread keeps which pool it belongs to.
    private static let poolKey = "backlot.BlockingPool"

    /// Whether the calling thread is one of this pool's.
    private var isOwnThread: Bool {
        (Thread.current.threadDictionary[Self.poolKey] as? ObjectIdentifier) == ObjectIdentifier(self)
    }

    /// Queues `job` for a thread of the pool (starting one when the pool grows and none is free);
    /// false — and nothing queued — once ``stop()`` has begun, so that the caller can run it itself.
    @discardableResult
    public func submit(_ job: @escaping @Sendable () -> Void) -> Bool {
        let nested = idleSeconds != nil && isOwnThread
        let outcome = queue.withLock { q -> (queued: Bool, grow: Bool, ownThread: Bool) in
            guard !q.stopped else { return (false, false, false) }
            let noneFree = q.pending >= q.started - q.busy
            // Nested work at the bound: a thread of its own rather than the queue (see `longRunning`).
            if nested && noneFree && q.started >= threads { return (true, false, true) }
            q.jobs.append(job)
            // A growing pool starts a thread when the jobs waiting outnumber its free threads.
            let grow = idleSeconds != nil && noneFree && q.started < threads
            if grow { q.started += 1 }
            return (true, grow, false)
        }
        guard outcome.queued else { return false }
        if outcome.ownThread {
            startThread(named: name, only: job)
            return true
        }
        if outcome.grow { startThread(named: name) }
        available.signal()
        return true
    }

    /// ``submit(_:)`` counted by `group`: entered now, left when `job` has run — or at once when
    /// the pool refuses it (stopped), so that a caller waiting for the group never waits for a job
    /// that will not run. Returns what ``submit(_:)`` does.
    ///
    /// ```swift
    /// let done = DispatchGroup()
    /// for part in parts { pool.submit(countedBy: done) { compress(part) } }
    /// done.wait()
    /// ```
    @discardableResult
    public func submit(countedBy group: DispatchGroup, _ job: @escaping @Sendable () -> Void) -> Bool {
        group.enter()
        let queued = submit {
            job()
            group.leave()
        }
        if !queued { group.leave() }
        return queued
    }

    /// Refuses new jobs, lets the threads run every job already queued, and returns when they
    /// have ended. Never call it from a job of the same pool (it would wait for itself).
    public func stop() {
        let wakeUps = queue.withLock { q -> Int in
            defer { q.stopped = true }
            return q.stopped ? 0 : q.started
        }
        for _ in 0..<wakeUps { available.signal() }
        running.wait()
    }

    private func work() {
        defer { running.leave() }
        while true {
            let woken: Bool
            if let idleSeconds {
                woken = available.wait(timeout: .now() + idleSeconds) == .success
            } else {
                available.wait()
                woken = true
            }
            let job = queue.withLock { q -> (@Sendable () -> Void)? in
                guard woken, q.next < q.jobs.count else { return nil }
                let job = q.jobs[q.next]
                q.next += 1
                if q.next == q.jobs.count {
                    q.jobs.removeAll(keepingCapacity: true)
                    q.next = 0
                }
                q.busy += 1
                return job
            }
            if let job {
                job()
                queue.withLock { $0.busy -= 1 }
                continue
            }
            // Woken with nothing queued (only ever by stop(), once every queued job was taken),
            // or idle for `idleSeconds` with nothing queued: the thread ends. Idle while a job is
            // queued (its wake-up not yet taken by anyone): it waits again and takes it.
            let ends = queue.withLock { q -> Bool in
                if woken { return q.stopped }
                guard q.pending == 0 else { return false }
                q.started -= 1
                return true
            }
            if ends { return }
        }
    }
}
