#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Helpers that turn a failed system call into a ``BacklotError`` naming the path and the operation.
public enum SystemCall {
    /// The text of an `errno` value.
    public static func describe(_ err: Int32) -> String {
        String(cString: strerror(err))
    }

    /// A ``BacklotError`` for the current `errno`.
    public static func error(_ operation: String, path: String, errno err: Int32 = errno) -> BacklotError {
        let hint: String? =
            switch err {
            case ENOSPC: "free some disk space and try again"
            case EACCES, EPERM: "check the permissions of this path"
            case ENOENT: "check that the path exists"
            default: nil
            }
        return BacklotError(.io, "\(operation) failed: \(describe(err))", context: path, hint: hint)
    }

    /// Retries `body` while it fails with `EINTR`; throws for any other failure.
    @discardableResult
    public static func retrying<T: BinaryInteger>(
        _ operation: String, path: String, _ body: () -> T
    ) throws -> T {
        while true {
            let result = body()
            if result >= 0 { return result }
            if errno == EINTR { continue }
            throw error(operation, path: path)
        }
    }
}

extension SystemCall {
    /// `write(2)` to a pipe, FIFO or socket whose reader may be gone, without the `SIGPIPE` that
    /// would end the whole process (an app, the agent, a test run): the signal is blocked on the
    /// calling thread for the call, a `SIGPIPE` the call raised is taken back, and the failure is
    /// `EPIPE` like any other. The process's signal dispositions are left alone, so a library
    /// may call it. Retries on `EINTR`. Returns what `write` returned (-1 with `errno` set).
    ///
    /// ```swift
    /// var byte: UInt8 = 1
    /// if SystemCall.writeWithoutBrokenPipeSignal(fd, &byte, 1) < 0 && errno == EPIPE { /* nobody reads */ }
    /// ```
    public static func writeWithoutBrokenPipeSignal(_ fd: Int32, _ buffer: UnsafeRawPointer?, _ count: Int) -> Int {
        var pipeSignal = sigset_t()
        sigemptyset(&pipeSignal)
        sigaddset(&pipeSignal, SIGPIPE)
        var previous = sigset_t()
        pthread_sigmask(SIG_BLOCK, &pipeSignal, &previous)
        let wasPending: Bool = {
            var pending = sigset_t()
            sigpending(&pending)
            return sigismember(&pending, SIGPIPE) == 1
        }()
        var n: Int
        repeat { n = write(fd, buffer, count) } while n < 0 && errno == EINTR
        let saved = errno
        if n < 0 && saved == EPIPE && !wasPending {
            // The SIGPIPE this write raised is pending on this thread: take it back.
            var none = timespec(tv_sec: 0, tv_nsec: 0)
            while sigtimedwait(&pipeSignal, nil, &none) < 0 && errno == EINTR {}
        }
        pthread_sigmask(SIG_SETMASK, &previous, nil)
        errno = saved
        return n
    }
}
