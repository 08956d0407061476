import BacklotTestSupport
import Dispatch
import Foundation
import Synchronization
import Testing

@testable import BacklotTaskScheduler

/// Task requests and launched tasks are classes an app shares between threads (Apple's are): their
/// mutable state is behind a `Mutex` (the proofs of `TaskRequest` and `BackgroundTask`). Threads of
/// their own, so that on two cores more than two run at once.
@Suite struct TaskConcurrencyTests {
    @Test func aRequestIsChangedAndReadByThreadsAtOnce() {
        let request = ProcessingTaskRequest(identifier: "p1")
        let dates = (0..<8).map { Date(timeIntervalSince1970: TimeInterval(1_000 * ($0 + 1))) }
        let torn = Atomic<Int>(0)
        onThreadsOfTheirOwn(8) { i in
            for n in 0..<500 {
                request.earliestBeginDate = dates[i]
                request.requiresNetworkConnectivity = n % 2 == 0
                request.requiresExternalPower = i % 2 == 0
                // A copy (what the scheduler stores) reads every field; each is one of those written.
                let copy = request.copy()
                if let date = copy.earliestBeginDate, !dates.contains(date) { torn.wrappingAdd(1, ordering: .relaxed) }
                _ = request.description
            }
        }
        #expect(torn.load(ordering: .relaxed) == 0)
        #expect(request.earliestBeginDate.map { dates.contains($0) } == true)
    }

    @Test func aTaskCompletedAndExpiredByThreadsAtOnceEndsOnce() {
        for round in 0..<200 {
            let ended = Atomic<Int>(0)
            let handlerCalls = Atomic<Int>(0)
            let task = AppRefreshTask(identifier: "refresh", kind: .refresh, started: Date()) { _, _ in
                ended.wrappingAdd(1, ordering: .relaxed)
            }
            task.expirationHandler = { handlerCalls.wrappingAdd(1, ordering: .relaxed) }
            onThreadsOfTheirOwn(4) { i in
                switch i % 4 {
                case 0: task.setTaskCompleted(success: true)
                case 1: task.setTaskCompleted(success: false)
                case 2:
                    if case .call(let handler) = task.expire() { handler() }
                default: task.expirationHandler = { handlerCalls.wrappingAdd(1, ordering: .relaxed) }
                }
            }
            #expect(ended.load(ordering: .relaxed) == 1, "round \(round): the completion was reported once")
            #expect(handlerCalls.load(ordering: .relaxed) <= 1, "round \(round)")
            #expect(task.isCompleted && task.outcome != nil)
        }
    }
}
