import BacklotBasics
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `ChildProcess` is `@unchecked Sendable` on the claim that other threads only signal its group
/// while its owner waits: this is that use, many times, with the signals racing the reaping.
@Suite struct ChildProcessConcurrencyTests {
    @Test func signallingFromOtherThreadsWhileTheOwnerWaitsEndsTheChild() throws {
        for round in 0..<20 {
            let child = try ChildProcess.start(
                executable: "/bin/sleep", arguments: ["30"], environment: [:], captureOutput: false)
            try child.release()
            // Four threads signal it until it is reaped, some of them after it was reaped.
            let signallers = (0..<4).map { _ in
                Thread {
                    for _ in 0..<50 {
                        child.signalGroup(SIGTERM)
                        usleep(200)
                    }
                }
            }
            for signaller in signallers { signaller.start() }
            let outcome = child.wait(until: .now + .seconds(30))
            #expect(outcome.signal == SIGTERM, "round \(round): \(outcome)")
            #expect(!outcome.timedOut, "round \(round)")
            while signallers.contains(where: { !$0.isFinished }) { usleep(1000) }
            child.signalGroup(SIGTERM)  // reaped: nothing is sent, not even to a reused process ID
        }
    }
}
