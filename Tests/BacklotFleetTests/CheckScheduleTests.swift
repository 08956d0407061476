import BacklotClient
import Testing

/// When a device checks next: spread, hints and back-off within their bounds.
@Suite struct CheckScheduleTests {
    let schedule = CheckSchedule(interval: 600, jitter: 0.2, firstRetry: 30, longestRetry: 3600)

    @Test(arguments: [0.0, 0.25, 0.5, 0.999])
    func aCheckIsSpreadAroundTheInterval(_ u: Double) {
        let d = schedule.delay(after: .checked(checkAfter: nil), random: u)
        #expect(d >= 480 && d < 720)
    }

    @Test func aHintOnlyDelaysAndIsBounded() {
        #expect(schedule.delay(after: .checked(checkAfter: 60), random: 0) == 480)  // never sooner
        #expect(schedule.delay(after: .checked(checkAfter: 3000), random: 0) == 3000)
        #expect(abs(schedule.delay(after: .checked(checkAfter: 3000), random: 0.5) - 3300) < 1e-6)
        #expect(schedule.delay(after: .checked(checkAfter: 10_000_000), random: 0) == 86_400)  // a day at most
        #expect(schedule.delay(after: .checked(checkAfter: -5), random: 0) == 480)
    }

    @Test func failuresBackOffExponentiallyUpToTheCap() {
        let lows = (1...10).map { schedule.delay(after: .failed(attempt: $0, retryAfter: nil), random: 0) }
        #expect(lows.prefix(5) == [15, 30, 60, 120, 240])
        // Capped by the interval (600 s): half fixed, half random.
        #expect(lows.suffix(4).allSatisfy { $0 == 300 })
        #expect(schedule.delay(after: .failed(attempt: 40, retryAfter: nil), random: 0.999) < 600)
        #expect(schedule.delay(after: .failed(attempt: Int.max, retryAfter: nil), random: 0) == 300)
    }

    @Test func retryAfterIsNeverCutShort() {
        #expect(schedule.delay(after: .failed(attempt: 1, retryAfter: 200), random: 0) == 200)
        #expect(schedule.delay(after: .failed(attempt: 1, retryAfter: 200), random: 0.5) == 250)
        #expect(schedule.delay(after: .failed(attempt: 1, retryAfter: 99_999), random: 0) == 3600)
    }
}
