import Foundation
import Testing

@testable import BacklotCommands

/// `backlot upload`'s tries after a failure (``UploadBackOff``), on a clock the test sets.
@Suite struct UploadBackOffTests {
    let start = Date(timeIntervalSince1970: 1_800_000_000)

    @Test func fortyTriesWithoutProgressThenItGivesUp() {
        var backOff = UploadBackOff(received: 1000)
        var pauses: [TimeInterval] = []
        for i in 0..<UploadBackOff.maximumTries {
            let pause = backOff.failed(busy: false, received: 1000, now: start.addingTimeInterval(Double(i)))
            #expect(pause != nil, "try \(i + 1)")
            pauses.append(pause ?? 0)
        }
        #expect(backOff.failed(busy: false, received: 1000, now: start.addingTimeInterval(40)) == nil)
        // 0.2 s longer each time, at most 3 s.
        #expect(Array(pauses.prefix(3)) == (1...3).map { 0.2 * Double($0) })
        #expect(pauses.max() == 3)
        #expect(pauses == pauses.sorted())
    }

    @Test func progressStartsTheCountAgain() {
        var backOff = UploadBackOff()
        for i in 0..<UploadBackOff.maximumTries {
            // Each failure after the server received more: never given up.
            let pause = backOff.failed(busy: false, received: UInt64(i + 1) * 4096, now: start)
            #expect(pause == 0.2)
            #expect(backOff.tries == 1)
        }
        for _ in 0..<UploadBackOff.maximumTries { _ = backOff.failed(busy: false, received: 0, now: start) }
        #expect(backOff.failed(busy: false, received: 0, now: start) == nil, "less than before is no progress")
    }

    @Test func aBusyServerIsWaitedForFifteenMinutesWithoutProgress() {
        var backOff = UploadBackOff()
        var now = start
        var tries = 0
        while let pause = backOff.failed(busy: true, received: 0, now: now) {
            tries += 1
            now += pause
            #expect(tries < 10_000)
            if tries >= 10_000 { break }
        }
        // Far more than forty tries, and given up only past fifteen minutes after the first failure.
        #expect(tries > UploadBackOff.maximumTries)
        #expect(now.timeIntervalSince(start) > UploadBackOff.busyFor)
        #expect(now.timeIntervalSince(start) <= UploadBackOff.busyFor + 3)
        // Progress while busy: waited for again from then on.
        var moving = UploadBackOff()
        _ = moving.failed(busy: true, received: 0, now: start)
        #expect(moving.failed(busy: true, received: 0, now: start + UploadBackOff.busyFor + 1) == nil)
        var resumed = UploadBackOff()
        _ = resumed.failed(busy: true, received: 0, now: start)
        #expect(resumed.failed(busy: true, received: 1, now: start + UploadBackOff.busyFor + 1) != nil)
    }
}
