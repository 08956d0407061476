import Testing

@testable import BacklotHTTPClient

/// The bandwidth limit's pacing: how long a transfer waits after each piece, on a clock the test
/// sets (no test waits for real time).
@Suite struct RatePacerTests {
    @Test func aTransferAheadOfItsRateWaitsForItAndOneBehindDoesNot() {
        var pacer = RatePacer(bytesPerSecond: 100_000)
        let t0 = ContinuousClock.now
        // 50 KB at once: due at 0.5 s.
        #expect(pacer.delay(afterReceiving: 50_000, at: t0) == .milliseconds(500))
        // 50 KB more at 0.5 s: due at 1 s.
        #expect(pacer.delay(afterReceiving: 50_000, at: t0 + .milliseconds(500)) == .milliseconds(500))
        // A burst of 300 KB at 1 s is due at 4 s: one wait of at most a second, then the rest.
        #expect(pacer.delay(afterReceiving: 300_000, at: t0 + .seconds(1)) == RatePacer.longestWait)
        #expect(pacer.delay(afterReceiving: 0, at: t0 + .seconds(2)) == RatePacer.longestWait)
        #expect(pacer.delay(afterReceiving: 0, at: t0 + .milliseconds(3_500)) == .milliseconds(500))
        #expect(pacer.delay(afterReceiving: 0, at: t0 + .seconds(4)) == .zero)
        // Slower than the rate: never a wait.
        #expect(pacer.delay(afterReceiving: 10_000, at: t0 + .seconds(10)) == .zero)
    }

    @Test func noLimitMakesNoPacerAndAHugeCountIsBounded() {
        #expect(RatePacer.forLimit(0) == nil)
        #expect(RatePacer.forLimit(-5) == nil)
        var pacer = RatePacer(bytesPerSecond: 1)
        let t0 = ContinuousClock.now
        #expect(pacer.delay(afterReceiving: Int.max, at: t0) == RatePacer.longestWait)
        #expect(pacer.delay(afterReceiving: Int.max, at: t0) == RatePacer.longestWait)
    }

    @Test func aCancelStopsTheWait() {
        var pacer = RatePacer(bytesPerSecond: 1)
        // A second's worth of bytes a million times over: only a cancel ends the wait at once.
        pacer.pace(afterReceiving: 1_000_000, isCancelled: { true })
    }
}
