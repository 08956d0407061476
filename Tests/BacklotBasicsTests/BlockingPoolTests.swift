import BacklotBasics
import Dispatch
import Foundation
import Synchronization
import Testing

/// The bridge to blocking work: its bound, the cancellation of queued work, errors, the threads
/// the work runs on, stopping; and the way back from synchronous code (`waitForAsync`).
/// No test measures time: every wait is for a state, under a deadline. The test functions never
/// block their thread (one of Swift's cooperative pool, which the tasks under test need too).
@Suite struct BlockingPoolTests {
    /// Waits without blocking the thread until `condition` holds; false if it never did. The
    /// deadline only bounds a hang: on 2 cores Swift's cooperative pool has 2 threads, and in a full
    /// `swift test` other suites' synchronous tests hold them for minutes, so a task this test
    /// starts may not run for that long (30 s was seen to fail so, at 177 s into the test).
    static func settled(_ condition: () -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + .seconds(600)
        while !condition() {
            guard ContinuousClock.now < deadline else { return false }
            try? await Task.sleep(nanoseconds: 1_000_000)
        }
        return true
    }

    /// The calling thread's name as the kernel has it (what `ps -L` and `top -H` show).
    static func name() -> String {
        let comm = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? ""
        return comm.trimmingCharacters(in: .newlines)
    }

    /// Waits, blocking the thread (a pool's), until `condition` holds; false if it never did (the
    /// deadline, as ``settled(_:)``'s, only bounds a hang).
    static func eventually(_ condition: () -> Bool) -> Bool {
        let deadline = ContinuousClock.now + .seconds(600)
        while !condition() {
            guard ContinuousClock.now < deadline else { return false }
            usleep(1000)
        }
        return true
    }

    @Test func neverRunsMoreBodiesAtOnceThanItHasThreads() async throws {
        let pool = BlockingPool(threads: 2, name: "bp-bound")
        defer { pool.stop() }
        let counts = Counts()
        let gate = DispatchSemaphore(value: 0)
        let waiting = Task {
            try await withThrowingTaskGroup(of: Int.self) { group in
                for index in 0..<8 {
                    group.addTask {
                        try await pool.run {
                            let now = counts.running.wrappingAdd(1, ordering: .acquiringAndReleasing).newValue
                            counts.most.max(now, ordering: .acquiringAndReleasing)
                            counts.started.wrappingAdd(1, ordering: .acquiringAndReleasing)
                            _ = gate.wait(timeout: .now() + 600)
                            counts.running.wrappingSubtract(1, ordering: .acquiringAndReleasing)
                            return index
                        }
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
        }
        #expect(await Self.settled { counts.started.load(ordering: .acquiring) == 2 }, "both threads took a body")
        // Both threads are held at the gate: nothing else can start, however long this looks.
        try await Task.sleep(nanoseconds: 50_000_000)
        let startedNow = counts.started.load(ordering: .acquiring)
        #expect(startedNow == 2, "a third body started while two were running")
        for _ in 0..<8 { gate.signal() }
        let done = try await waiting.value
        #expect(done.sorted() == Array(0..<8), "every body ran once")
        let most = counts.most.load(ordering: .acquiring)
        #expect(most == 2, "at most two bodies ran at once")
    }

    @Test func workCancelledWhileQueuedNeverStartsAndThrowsCancellation() async throws {
        let pool = BlockingPool(threads: 1, name: "bp-cancel")
        defer { pool.stop() }
        let counts = Counts()
        let release = DispatchSemaphore(value: 0)
        let blocker = Task {
            try await pool.run {
                counts.started.wrappingAdd(1, ordering: .acquiringAndReleasing)
                _ = release.wait(timeout: .now() + 600)
            }
        }
        #expect(await Self.settled { counts.started.load(ordering: .acquiring) == 1 }, "the pool's one thread is busy")
        let queued = Task { try await pool.run { counts.ran.store(true, ordering: .releasing) } }
        queued.cancel()
        await #expect(throws: CancellationError.self) { try await queued.value }
        release.signal()
        try await blocker.value
        // The queue runs in order: once a job submitted after the cancelled one ran, it was passed over.
        try await pool.run {}
        let didRun = counts.ran.load(ordering: .acquiring)
        #expect(!didRun, "the cancelled body never ran")
    }

    @Test func aTaskCancelledBeforeItAsksNeverQueues() async throws {
        let pool = BlockingPool(threads: 1, name: "bp-early")
        defer { pool.stop() }
        let counts = Counts()
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await pool.run { counts.ran.store(true, ordering: .releasing) }
        }
        await #expect(throws: CancellationError.self) { try await task.value }
        try await pool.run {}
        let didRun = counts.ran.load(ordering: .acquiring)
        #expect(!didRun)
    }

    @Test func workStartedRunsToItsEndWhenCancelled() async throws {
        let pool = BlockingPool(threads: 1, name: "bp-started")
        defer { pool.stop() }
        let counts = Counts()
        let release = DispatchSemaphore(value: 0)
        let task = Task {
            try await pool.run { () -> Int in
                counts.started.wrappingAdd(1, ordering: .acquiringAndReleasing)
                _ = release.wait(timeout: .now() + 600)
                return 42
            }
        }
        #expect(await Self.settled { counts.started.load(ordering: .acquiring) == 1 })
        task.cancel()
        release.signal()
        #expect(try await task.value == 42, "a body that started is not interrupted: its result is returned")
    }

    @Test func errorsPropagateToTheCaller() async throws {
        let pool = BlockingPool(threads: 1, name: "bp-errors")
        defer { pool.stop() }
        do {
            _ = try await pool.run { () throws -> Int in throw BacklotError(.io, "the disk said no", context: "x") }
            Issue.record("no error")
        } catch let e as BacklotError {
            #expect(e.code == .io)
            #expect(e.message == "the disk said no")
        }
        #expect(try await pool.run { 7 } == 7, "the thread survives a throwing body")
    }

    @Test func workRunsOnThePoolsThreadsNotTheCallers() async throws {
        let pool = BlockingPool(threads: 2, name: "bp-where")
        defer { pool.stop() }
        let caller = Self.name()
        let names = try await pool.run { Self.name() }
        #expect(names.hasPrefix("bp-where"), "ran on \(names)")
        #expect(names != caller, "ran on the caller's thread \(caller)")
        let shared = try await BlockingPool.shared.run { Self.name() }
        #expect(shared.hasPrefix("backlot-pool"), "ran on \(shared)")
        let long = try await BlockingPool.longRunning.run { Self.name() }
        #expect(long == "backlot-long", "ran on \(long)")
        #expect(BlockingPool.shared.threads >= 2)
        #expect(BlockingPool.longRunning.threads == BlockingPool.longRunningLimit)
    }

    @Test func theLongRunningPoolRunsEveryJobAtOnce() async throws {
        // Five bodies that each wait for all five to have started: only a pool that grows finishes.
        let counts = Counts()
        let all = try await withThrowingTaskGroup(of: Bool.self) { group in
            for _ in 0..<5 {
                group.addTask {
                    try await BlockingPool.longRunning.run {
                        counts.started.wrappingAdd(1, ordering: .acquiringAndReleasing)
                        return Self.eventually { counts.started.load(ordering: .acquiring) == 5 }
                    }
                }
            }
            return try await group.reduce(true) { $0 && $1 }
        }
        #expect(all)
    }

    /// Threads of the pool's own name alive in this process (from /proc/self/task).
    static func threadsNamed(_ name: String) -> Int {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.filter { task in
            let comm = (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8)) ?? ""
            return comm.trimmingCharacters(in: .newlines) == name
        }.count
    }

    /// A growing pool starts a thread for a job that finds none free, never more than its bound
    /// (past it, jobs wait in the queue and run as threads come free), reuses a free thread, and
    /// ends the threads that stay idle.
    @Test func aGrowingPoolStartsThreadsUpToItsBoundAndEndsIdleOnes() async throws {
        let pool = BlockingPool(upTo: 3, name: "bp-grow", idleSeconds: 0.2)
        defer { pool.stop() }
        #expect(Self.threadsNamed("bp-grow") == 0, "no thread before the first job")
        let counts = Counts()
        let gate = DispatchSemaphore(value: 0)
        for _ in 0..<5 {
            #expect(
                pool.submit {
                    let now = counts.running.wrappingAdd(1, ordering: .acquiringAndReleasing).newValue
                    counts.most.max(now, ordering: .acquiringAndReleasing)
                    counts.started.wrappingAdd(1, ordering: .acquiringAndReleasing)
                    _ = gate.wait(timeout: .now() + 600)
                    counts.running.wrappingSubtract(1, ordering: .acquiringAndReleasing)
                })
        }
        #expect(await Self.settled { counts.started.load(ordering: .acquiring) == 3 }, "three threads took a job")
        try await Task.sleep(nanoseconds: 50_000_000)
        #expect(counts.started.load(ordering: .acquiring) == 3, "a fourth job started past the bound")
        #expect(Self.threadsNamed("bp-grow") == 3)
        for _ in 0..<5 { gate.signal() }
        #expect(await Self.settled { counts.started.load(ordering: .acquiring) == 5 }, "the queued jobs ran")
        #expect(await Self.settled { counts.running.load(ordering: .acquiring) == 0 })
        #expect(counts.most.load(ordering: .acquiring) == 3, "at most three at once")
        // Idle, the threads end; a job then starts one again.
        #expect(await Self.settled { Self.threadsNamed("bp-grow") == 0 }, "idle threads ended")
        let ran = try await pool.run { Self.name() }
        #expect(ran == "bp-grow")
        // A job that finds a free thread runs on it: no thread is started for it.
        let reuse = BlockingPool(upTo: 4, name: "bp-reuse", idleSeconds: 600)
        defer { reuse.stop() }
        let first = try await reuse.run { pthread_self() }
        #expect(await Self.settled { reuse.freeThreads == 1 }, "the thread is free once its job is done")
        let second = try await reuse.run { pthread_self() }
        #expect(second == first, "the free thread took the next job")
        #expect(Self.threadsNamed("bp-reuse") == 1)
    }

    /// A job of a growing pool at its bound that submits work and waits for it (an install and
    /// its download workers) gets that work run on a thread of its own, never queued behind itself.
    @Test func nestedWorkAtTheBoundIsNotQueuedBehindItsCaller() async throws {
        let pool = BlockingPool(upTo: 1, name: "bp-nest", idleSeconds: 600)
        defer { pool.stop() }
        let children = try await pool.run { () -> Int in
            let ran = Atomic<Int>(0)
            let done = DispatchGroup()
            for _ in 0..<3 { pool.submit(countedBy: done) { ran.wrappingAdd(1, ordering: .relaxed) } }
            // The pool's one thread is this one: queued, the children would never run.
            guard done.wait(timeout: .now() + 600) == .success else { return -1 }
            return ran.load(ordering: .relaxed)
        }
        #expect(children == 3)
        // Work submitted from outside at the bound still waits in the queue (the bound holds).
        let gate = DispatchSemaphore(value: 0)
        let counts = Counts()
        pool.submit {
            counts.started.wrappingAdd(1, ordering: .acquiringAndReleasing)
            _ = gate.wait(timeout: .now() + 600)
        }
        pool.submit { counts.started.wrappingAdd(1, ordering: .acquiringAndReleasing) }
        #expect(await Self.settled { counts.started.load(ordering: .acquiring) == 1 })
        try await Task.sleep(nanoseconds: 50_000_000)
        #expect(counts.started.load(ordering: .acquiring) == 1, "the second job waited for the bound")
        gate.signal()
        #expect(await Self.settled { counts.started.load(ordering: .acquiring) == 2 })
    }

    @Test func aGrowingPoolStopsWithWhatWasQueued() async throws {
        let pool = BlockingPool(upTo: 2, name: "bp-gstop", idleSeconds: 600)
        let counts = Counts()
        for _ in 0..<20 { #expect(pool.submit { counts.started.wrappingAdd(1, ordering: .relaxed) }) }
        pool.stop()
        #expect(counts.started.load(ordering: .relaxed) == 20, "every job queued before stop() ran")
        #expect(await Self.settled { Self.threadsNamed("bp-gstop") == 0 }, "stop() ended every thread")
        #expect(!pool.submit {})
    }

    @Test func stopRunsWhatWasQueuedThenRefuses() async throws {
        let pool = BlockingPool(threads: 2, name: "bp-stop")
        let counts = Counts()
        let counted = DispatchGroup()
        for _ in 0..<20 {
            #expect(pool.submit(countedBy: counted) { counts.started.wrappingAdd(1, ordering: .relaxed) })
        }
        pool.stop()
        let ran = counts.started.load(ordering: .relaxed)
        #expect(ran == 20, "every job queued before stop() ran")
        #expect(counted.wait(timeout: .now()) == .success, "the group was left once per job")
        #expect(!pool.submit {}, "a stopped pool takes nothing")
        // A job a stopped pool refuses leaves its group at once: nobody waits for it.
        let refused = DispatchGroup()
        #expect(!pool.submit(countedBy: refused) { Issue.record("a refused job ran") })
        #expect(refused.wait(timeout: .now()) == .success)
        pool.stop()  // twice is harmless
        do {
            try await pool.run {}
            Issue.record("a stopped pool ran a body")
        } catch let e as BacklotError {
            #expect(e.code == .unavailable)
        }
    }

    /// From a thread of its own, as the command line's main thread and libbacklot's callers are.
    @Test func waitForAsyncReturnsThrowsAndPollsOnTheWaitingThread() async throws {
        try await BlockingPool.longRunning.run { try Self.waitForAsyncFromAThread() }
    }

    static func waitForAsyncFromAThread() throws {
        #expect(try BlockingPool.waitForAsync { () async throws -> Int in 3 } == 3)
        #expect(throws: BacklotError.self) {
            try BlockingPool.waitForAsync { () async throws -> Int in throw BacklotError(.io, "no") }
        }
        let counts = Counts()
        let waiter = Thread.current
        let value = try BlockingPool.waitForAsync(
            polling: {
                counts.started.wrappingAdd(1, ordering: .acquiringAndReleasing)
                counts.pollThreads.withLock { _ = $0.insert(Thread.current == waiter) }
            }, every: 0.001
        ) { () async throws -> Int in
            let deadline = ContinuousClock.now + .seconds(600)
            while counts.started.load(ordering: .acquiring) < 3, ContinuousClock.now < deadline {
                try await Task.sleep(nanoseconds: 1_000_000)
            }
            return counts.started.load(ordering: .acquiring)
        }
        #expect(value >= 3, "poll was called while the body ran")
        let onWaiter = counts.pollThreads.withLock { $0 }
        #expect(onWaiter == [true], "poll ran on the waiting thread only")
    }
}

/// Counters the bodies share with the test.
private final class Counts: Sendable {
    let running = Atomic<Int>(0)
    let most = Atomic<Int>(0)
    let started = Atomic<Int>(0)
    let ran = Atomic<Bool>(false)
    let pollThreads = Mutex<Set<Bool>>([])
}
