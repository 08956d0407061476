import BacklotTestSupport
import Dispatch
import Foundation
import Synchronization
import Testing

@testable import BacklotRepository

/// The processing scheduler's fairness: apps take turns, one job per app at a time, a queued job
/// can be dropped and a running one told to stop.
@Suite struct ProcessingSchedulerTests {
    final class Order: Sendable {
        let jobs = Mutex<[String]>([])
        func add(_ job: String) { jobs.withLock { $0.append(job) } }
        var all: [String] { jobs.withLock { $0 } }
    }

    @Test func appsTakeTurnsWhateverTheyQueued() {
        let scheduler = ProcessingScheduler(workers: 1)
        let order = Order()
        let gate = DispatchSemaphore(value: 0)
        // The first job holds the only worker until everything is queued.
        scheduler.schedule(versionID: 1, app: "a") { _ in
            gate.wait()
            order.add("a1")
        }
        for (id, name) in [(2, "a2"), (3, "a3"), (4, "a4")] {
            scheduler.schedule(versionID: Int64(id), app: "a") { _ in order.add(name) }
        }
        scheduler.schedule(versionID: 5, app: "b") { _ in order.add("b1") }
        scheduler.schedule(versionID: 6, app: "b") { _ in order.add("b2") }
        scheduler.schedule(versionID: 7, app: "c") { _ in order.add("c1") }
        scheduler.schedule(versionID: 2, app: "a") { _ in order.add("a2 again") }  // already queued: not twice
        gate.signal()
        scheduler.waitUntilIdle()
        #expect(order.all == ["a1", "b1", "c1", "a2", "b2", "a3", "a4"])
    }

    @Test func anAppRunsOneJobAtATimeAndOthersUseTheSecondWorker() {
        let scheduler = ProcessingScheduler(workers: 2)
        let order = Order()
        let hold = DispatchSemaphore(value: 0)
        scheduler.schedule(versionID: 1, app: "a") { _ in
            hold.wait()
            order.add("a1")
        }
        scheduler.schedule(versionID: 2, app: "a") { _ in order.add("a2") }
        let done = DispatchSemaphore(value: 0)
        scheduler.schedule(versionID: 3, app: "b") { _ in
            order.add("b1")
            done.signal()
        }
        done.wait()  // b1 ran while a1 holds a worker, and a2 did not take the second one
        #expect(order.all == ["b1"])
        hold.signal()
        scheduler.waitUntilIdle()
        #expect(order.all == ["b1", "a1", "a2"])
    }

    @Test func cancellingDropsAQueuedJobAndFlagsARunningOne() {
        let scheduler = ProcessingScheduler(workers: 1)
        let order = Order()
        let started = DispatchSemaphore(value: 0)
        scheduler.schedule(versionID: 1, app: "a") { flag in
            started.signal()
            // Told to stop within 30 s, or the order says it never was.
            let told = Wait.holds(within: .seconds(30), poll: .milliseconds(1)) { flag.isSet }
            order.add(told ? "a1 stopped" : "a1 never told to stop")
        }
        scheduler.schedule(versionID: 2, app: "a") { _ in order.add("a2") }
        started.wait()
        scheduler.cancel(versionID: 2)
        scheduler.cancel(versionID: 1)
        scheduler.waitUntilIdle()
        #expect(order.all == ["a1 stopped"])
    }
}
