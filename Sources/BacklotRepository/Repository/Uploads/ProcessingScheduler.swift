import BacklotBasics
import Dispatch
import Synchronization

/// Runs the processing of uploaded archives fairly: each app has its own queue, apps take turns
/// (round-robin), an app has at most one archive processing at a time, and `workers` archives are
/// processed at once. So one app's queue — or one long archive — never holds another app back.
/// A queued job can be cancelled (it is dropped); a running one is told to stop through its flag.
final class ProcessingScheduler: Sendable {
    /// A job's cancellation flag, looked at by the job between chunks.
    final class Flag: Sendable {
        private let value = Atomic<Bool>(false)
        var isSet: Bool { value.load(ordering: .relaxed) }
        func set() { value.store(true, ordering: .relaxed) }
    }

    private struct Job {
        let id: Int64
        let work: @Sendable (Flag) -> Void
    }

    private struct State {
        var queues: [String: [Job]] = [:]
        /// Apps in turn order; an app is here while it has queued jobs.
        var turns: [String] = []
        var runningApps: Set<String> = []
        var running: [Int64: Flag] = [:]
        var workers = 0
        var stopping = false
    }

    private let state = Mutex(State())
    private let idle = DispatchGroup()
    private let workerLimit: Int

    /// - Parameter workers: how many archives are processed at once (at least 1).
    init(workers: Int) {
        workerLimit = max(1, workers)
    }

    /// Queues a version's processing behind the other jobs of its app (a job queued or running already is not queued again).
    /// - Parameter work: processes the version, looking at the flag between chunks.
    func schedule(versionID: Int64, app: String, work: @escaping @Sendable (Flag) -> Void) {
        idle.enter()
        let (queued, startWorker) = state.withLock { s -> (Bool, Bool) in
            if s.stopping { return (false, false) }
            if s.running[versionID] != nil || s.queues[app]?.contains(where: { $0.id == versionID }) == true {
                return (false, false)
            }
            s.queues[app, default: []].append(Job(id: versionID, work: work))
            if !s.turns.contains(app) { s.turns.append(app) }
            guard s.workers < workerLimit else { return (true, false) }
            s.workers += 1
            return (true, true)
        }
        if !queued { idle.leave() }
        if startWorker { BlockingPool.longRunning.submit { [self] in runJobs() } }  // at most `workerLimit` at once
    }

    /// Drops a queued job, or tells a running one to stop.
    func cancel(versionID: Int64) {
        let dropped = state.withLock { s -> Bool in
            if let flag = s.running[versionID] {
                flag.set()
                return false
            }
            for (app, queue) in s.queues where queue.contains(where: { $0.id == versionID }) {
                s.queues[app] = queue.filter { $0.id != versionID }
                if s.queues[app]!.isEmpty {
                    s.queues[app] = nil
                    s.turns.removeAll { $0 == app }
                }
                return true
            }
            return false
        }
        if dropped { idle.leave() }
    }

    /// Waits until nothing is queued or running.
    func waitUntilIdle() { idle.wait() }

    /// Whether ``stop()`` was called: a job that finds its flag set then was interrupted, not
    /// cancelled, and leaves its version for another server or the next start.
    var isStopping: Bool { state.withLock { $0.stopping } }

    /// Stops for good (the server is stopping): drops what is queued, tells what runs to stop,
    /// waits for it, and schedules nothing more.
    func stop() {
        let dropped = state.withLock { s -> Int in
            s.stopping = true
            for flag in s.running.values { flag.set() }
            let count = s.queues.values.reduce(0) { $0 + $1.count }
            s.queues = [:]
            s.turns = []
            return count
        }
        for _ in 0..<dropped { idle.leave() }
        idle.wait()
    }

    /// A worker: takes the next app's next job in turn until none can run.
    private func runJobs() {
        while true {
            let next = state.withLock { s -> (Job, String, Flag)? in
                guard let turn = s.turns.firstIndex(where: { !s.runningApps.contains($0) }) else {
                    s.workers -= 1
                    return nil
                }
                let app = s.turns.remove(at: turn)
                var queue = s.queues[app] ?? []
                let job = queue.removeFirst()
                s.queues[app] = queue.isEmpty ? nil : queue  // its next turn comes after the others' (see below)
                let flag = Flag()
                s.runningApps.insert(app)
                s.running[job.id] = flag
                return (job, app, flag)
            }
            guard let (job, app, flag) = next else { return }
            job.work(flag)
            state.withLock { s in
                s.runningApps.remove(app)
                s.running[job.id] = nil
                // Round-robin: an app that has more waits behind every app that queued meanwhile.
                s.turns.removeAll { $0 == app }
                if s.queues[app] != nil { s.turns.append(app) }
            }
            idle.leave()
        }
    }
}
