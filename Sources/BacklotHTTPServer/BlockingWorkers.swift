import Dispatch
import Foundation
import Synchronization

/// A few threads of their own for the work a request may have to wait for — an upload's `fsync`
/// and the start of its processing, a management call that publishes a channel — so that none of
/// libmicrohttpd's pool threads, which serve every other connection, waits for it. The connection
/// is suspended meanwhile (`MHD_suspend_connection`) and resumed when its answer is ready.
///
/// ```swift
/// let workers = BlockingWorkers(threads: 4)
/// if !workers.submit({ print("on a worker") }) { print("stopped: run it yourself") }
/// workers.stop()   // runs what was submitted, then ends the threads
/// ```
final class BlockingWorkers: Sendable {
    private struct Queue {
        var jobs: [@Sendable () -> Void] = []
        var next = 0
        var stopped = false
    }

    /// How many threads there are.
    let threads: Int
    private let queue = Mutex(Queue())
    private let available = UncheckedSemaphore()
    private let running = Atomic<Int>(0)

    /// Starts `threads` threads (at least one).
    init(threads: Int, name: String = "backlot-work") {
        self.threads = max(1, threads)
        for index in 0..<self.threads {
            running.wrappingAdd(1, ordering: .relaxed)
            let thread = Thread { [self] in work() }
            thread.name = "\(name)\(index + 1)"  // Linux keeps 15 bytes of a thread name
            thread.start()
        }
    }

    /// Queues `job` for a worker; false (and nothing queued) once ``stop()`` has begun, so that
    /// the caller runs it itself.
    @discardableResult
    func submit(_ job: @escaping @Sendable () -> Void) -> Bool {
        let queued = queue.withLock { q -> Bool in
            guard !q.stopped else { return false }
            q.jobs.append(job)
            return true
        }
        if queued { available.signal() }
        return queued
    }

    /// Refuses new jobs, lets the threads run every job already queued, and returns when they have ended.
    func stop() {
        let first = queue.withLock { q -> Bool in
            defer { q.stopped = true }
            return !q.stopped
        }
        if first { for _ in 0..<threads { available.signal() } }
        while running.load(ordering: .acquiring) > 0 { usleep(1000) }
    }

    private func work() {
        defer { running.wrappingAdd(-1, ordering: .releasing) }
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

/// `DispatchSemaphore`, which is thread-safe, for a `Sendable` type.
private final class UncheckedSemaphore: @unchecked Sendable {
    private let semaphore = DispatchSemaphore(value: 0)
    func signal() { semaphore.signal() }
    func wait() { semaphore.wait() }
}
