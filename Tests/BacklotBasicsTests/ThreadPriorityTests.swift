import BacklotBasics
import Testing

/// Work run lowered runs on a thread of its own below its caller's priority; the caller's stays.
@Suite struct ThreadPriorityTests {
    @Test func theWorkRunsLoweredAndTheCallerIsLeftAsItWas() throws {
        let before = try #require(ThreadPriority.currentNiceValue, "this thread's nice value cannot be read")
        let inside = try ThreadPriority.runLowered(by: 5) { ThreadPriority.currentNiceValue }
        #expect(inside == min(19, before + 5))
        #expect(ThreadPriority.currentNiceValue == before)
    }

    @Test func theLowestIs19() throws {
        let inside = try ThreadPriority.runLowered(by: 40) { ThreadPriority.currentNiceValue }
        #expect(inside == 19)
    }

    struct Refused: Error, Equatable {}

    @Test func whatTheWorkThrowsIsThrown() {
        #expect(throws: Refused()) { try ThreadPriority.runLowered(by: 1) { () throws -> Int in throw Refused() } }
        #expect((try? ThreadPriority.runLowered(by: 1) { 42 }) == 42)
    }
}
