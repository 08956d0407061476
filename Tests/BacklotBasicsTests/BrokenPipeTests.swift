import BacklotBasics
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A write whose reader is gone fails with EPIPE and never ends the process with SIGPIPE (which
/// would take down an app, the agent or a whole test run).
@Suite struct BrokenPipeTests {
    @Test func aWriteToAPipeNobodyReadsFailsWithEPIPE() {
        var fds: [Int32] = [-1, -1]
        #expect(pipe(&fds) == 0)
        close(fds[0])
        defer { close(fds[1]) }
        var byte: UInt8 = 7
        for _ in 0..<3 {  // more than once: no SIGPIPE is left pending to strike later
            let n = SystemCall.writeWithoutBrokenPipeSignal(fds[1], &byte, 1)
            #expect(n == -1 && errno == EPIPE)
        }
        var pending = sigset_t()
        sigpending(&pending)
        #expect(sigismember(&pending, SIGPIPE) == 0)
        // The thread's signal mask is as it was.
        var mask = sigset_t()
        pthread_sigmask(SIG_SETMASK, nil, &mask)
        #expect(sigismember(&mask, SIGPIPE) == 0)
    }

    @Test func aWriteToAPipeSomeoneReadsStillWorks() {
        var fds: [Int32] = [-1, -1]
        #expect(pipe(&fds) == 0)
        defer {
            close(fds[0])
            close(fds[1])
        }
        var bytes: [UInt8] = [1, 2, 3]
        #expect(SystemCall.writeWithoutBrokenPipeSignal(fds[1], &bytes, 3) == 3)
        var back = [UInt8](repeating: 0, count: 3)
        #expect(read(fds[0], &back, 3) == 3 && back == [1, 2, 3])
    }
}
