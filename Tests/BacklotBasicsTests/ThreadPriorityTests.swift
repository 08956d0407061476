import BacklotBasics
import Foundation
import Synchronization
import Testing

/// Work run lowered runs on a thread of its own below its caller's priority, and so do the threads
/// it starts; the caller's stays.
@Suite struct ThreadPriorityTests {
    @Test func theWorkRunsLoweredAndTheCallerIsLeftAsItWas() throws {
        let before = try #require(ThreadPriority.currentNiceValue, "this thread's nice value cannot be read")
        // Run at nice 15 or more, lowering by 5 could not be told from doing nothing.
        try #require(before <= 14, "the tests run at nice \(before): run them at 14 or less")
        let inside = try ThreadPriority.runLowered(by: 5) { ThreadPriority.currentNiceValue }
        #expect(inside == before + 5)
        #expect(ThreadPriority.currentNiceValue == before)
    }

    /// The installer's download threads, started by the lowered work, run as low as it does.
    @Test func threadsTheWorkStartsInheritItsPriority() throws {
        let before = try #require(ThreadPriority.currentNiceValue)
        try #require(before <= 14, "the tests run at nice \(before): run them at 14 or less")
        let seen = try ThreadPriority.runLowered(by: 5) { () -> Int32? in
            let child = Mutex<Int32?>(nil)
            let done = DispatchSemaphore(value: 0)
            Thread.detachNewThread {
                child.withLock { $0 = ThreadPriority.currentNiceValue }
                done.signal()
            }
            done.wait()
            return child.withLock { $0 }
        }
        #expect(seen == before + 5)
    }

    @Test func aLargeStepIsClampedTo19() throws {
        #expect(try ThreadPriority.runLowered(by: .max) { ThreadPriority.currentNiceValue } == 19)
        #expect(try ThreadPriority.runLowered(by: 40) { ThreadPriority.currentNiceValue } == 19)
    }

    struct Refused: Error, Equatable {}

    @Test func whatTheWorkThrowsIsThrown() {
        #expect(throws: Refused()) { try ThreadPriority.runLowered(by: 1) { () throws -> Int in throw Refused() } }
        #expect((try? ThreadPriority.runLowered(by: 1) { 42 }) == 42)
    }
}
