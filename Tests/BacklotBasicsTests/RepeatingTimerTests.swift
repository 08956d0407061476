import BacklotBasics
import Dispatch
import Foundation
import Synchronization
import Testing

/// The timer's end: once `cancelAndWait` returns, no call runs and what the body captured is
/// released (a process may exit then without leaving it behind: libbacklot's leak check saw the
/// body of a cancelled listener still held at exit); from inside the body, it does not wait for itself.
@Suite struct RepeatingTimerTests {
    final class Captured: Sendable {}

    @Test func cancelAndWaitReleasesTheBody() {
        let calls = Atomic<Int>(0)
        weak var captured: Captured?
        let timer: RepeatingTimer
        do {
            let object = Captured()
            captured = object
            timer = RepeatingTimer(label: "backlot.test-timer", every: 0.001, after: 0) {
                withExtendedLifetime(object) { _ = calls.add(1, ordering: .relaxed) }
            }
        }
        #expect(captured != nil, "the timer holds its body")
        timer.cancelAndWait()
        #expect(captured == nil, "the body and what it captured are released when cancelAndWait returns")
        let after = calls.load(ordering: .relaxed)
        timer.cancelAndWait()  // a second call returns at once
        #expect(calls.load(ordering: .relaxed) == after, "no call runs after cancelAndWait")
    }

    @Test func cancelAndWaitFromTheBodyDoesNotWaitForItself() {
        let returned = DispatchSemaphore(value: 0)
        let slot = Mutex<RepeatingTimer?>(nil)
        let timer = RepeatingTimer(label: "backlot.test-timer-self", every: 0.001, after: 0) {
            guard let me = slot.withLock({ $0 }) else { return }
            me.cancelAndWait()
            returned.signal()
        }
        slot.withLock { $0 = timer }
        let ended = returned.wait(timeout: .now() + 30) == .success
        #expect(ended, "cancelAndWait from the body returned")
        if ended { timer.cancelAndWait() } else { timer.cancel() }  // never a second hang
        slot.withLock { $0 = nil }
    }

    /// The proof of `RepeatingTimer`'s `@unchecked Sendable`, exercised: one timer, firing every
    /// millisecond, cancelled by eight threads at once; every call returns, and no call runs after.
    @Test func cancelledByManyThreadsAtOnce() {
        let calls = Atomic<Int>(0)
        let timer = RepeatingTimer(label: "backlot.test-timer-many", every: 0.001, after: 0) {
            calls.add(1, ordering: .relaxed)
        }
        while calls.load(ordering: .relaxed) < 3 { usleep(1_000) }  // it fires
        let done = DispatchGroup()
        for _ in 0..<8 {
            done.enter()
            BlockingPool.longRunning.submit {
                timer.cancelAndWait()
                done.leave()
            }
        }
        #expect(done.wait(timeout: .now() + 30) == .success, "every cancelAndWait returned")
        let after = calls.load(ordering: .relaxed)
        usleep(20_000)
        #expect(calls.load(ordering: .relaxed) == after, "no call runs after cancelAndWait")
    }
}
