import BacklotBasics
import Dispatch
import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The one file lock every process of Backlot takes: kinds, waiting, release, the probe that
/// never takes the lock, and a lock held by another process that dies.
@Suite(.serialized) struct FileLockTests {
    func lockPath(_ name: String) -> String { NSTemporaryDirectory() + "backlot-filelock-\(getpid())-\(name).lock" }

    @Test func exclusiveAndSharedExcludeAsTheySay() throws {
        let path = lockPath("kinds")
        defer { unlink(path) }
        let a = try #require(try FileLock.acquire(path, .exclusive, waiting: false))
        // Two opens in one process exclude each other, as two processes do.
        #expect(try FileLock.acquire(path, .exclusive, waiting: false) == nil)
        #expect(try FileLock.acquire(path, .shared, waiting: false) == nil)
        #expect(FileLock.isHeld(path))
        a.release()
        a.release()  // twice is harmless
        #expect(!FileLock.isHeld(path))
        let s1 = try #require(try FileLock.acquire(path, .shared, waiting: false))
        let s2 = try #require(try FileLock.acquire(path, .shared, waiting: false))
        #expect(try FileLock.acquire(path, .exclusive, waiting: false) == nil)
        #expect(FileLock.isHeld(path))
        s1.release()
        #expect(try FileLock.acquire(path, .exclusive, waiting: false) == nil, "one shared holder is left")
        s2.release()
        #expect(try FileLock.acquire(path, .exclusive, waiting: false) != nil)
        #expect(!FileLock.isHeld(lockPath("never-created")), "a lock file that does not exist is not held")
    }

    @Test func aWaitingTakerGetsTheLockWhenItIsReleased() throws {
        let path = lockPath("wait")
        defer { unlink(path) }
        let held = try #require(try FileLock.acquire(path, waiting: true))
        let started = DispatchSemaphore(value: 0)
        let got = DispatchSemaphore(value: 0)
        let order = Mutex<[String]>([])
        Thread.detachNewThread {
            started.signal()
            try? FileLock.holding(path) { order.withLock { $0.append("waiter") } }
            got.signal()
        }
        started.wait()
        usleep(50_000)
        order.withLock { $0.append("holder") }
        held.release()
        got.wait()
        #expect(order.withLock { $0 } == ["holder", "waiter"])
    }

    /// The probe asks without taking: a taker that does not wait never fails because of it.
    @Test func probingNeverMakesATakerFail() throws {
        let path = lockPath("probe")
        defer { unlink(path) }
        let failures = Atomic<Int>(0)
        let stop = Atomic<Bool>(false)
        let prober = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            while !stop.load(ordering: .relaxed) { _ = FileLock.isHeld(path) }
            prober.signal()
        }
        for _ in 0..<2000 {
            if let lock = try FileLock.acquire(path, .exclusive, waiting: false) {
                lock.release()
            } else {
                failures.add(1, ordering: .relaxed)
            }
        }
        stop.store(true, ordering: .relaxed)
        prober.wait()
        #expect(failures.load(ordering: .relaxed) == 0)
    }

    /// A lock held by another process (a POSIX lock of Python's, which conflicts with ours) is
    /// seen, refused, and free once that process is killed.
    @Test func aLockOfAnotherProcessEndsWithIt() throws {
        let path = lockPath("process")
        defer { unlink(path) }
        FileManager.default.createFile(atPath: path, contents: nil)
        let script =
            "import fcntl,sys,time; f=open(sys.argv[1],'r+'); fcntl.lockf(f, fcntl.LOCK_EX); print('held', flush=True); time.sleep(60)"
        let child = try ChildProcess.start(
            executable: "/usr/bin/python3", arguments: ["-c", script, path],
            environment: ProcessInfo.processInfo.environment, captureOutput: false)
        try child.release()
        var seen = false
        for _ in 0..<6_000 where !seen {  // at most a minute for python3 to start and lock
            seen = FileLock.isHeld(path)
            if !seen { usleep(10_000) }
        }
        #expect(seen, "the other process's lock was never seen")
        #expect(try FileLock.acquire(path, .shared, waiting: false) == nil)
        child.signalGroup(SIGKILL)
        _ = child.wait(until: .now + .seconds(10))
        #expect(try FileLock.acquire(path, .exclusive, waiting: false) != nil)
    }
}
