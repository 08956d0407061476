import BacklotBasics
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Waiting in tests: every wait polls a condition under a deadline (on the monotonic clock) and,
/// when the deadline passes first, throws ``TimedOut`` naming what was awaited and what was seen
/// last, which fails the test. No test waits for ever, and none waits a fixed time in place of a
/// condition.
///
/// ```swift
/// try Wait.until("the version is processed", timeout: .seconds(30)) { try state() == "COMPLETE" }
/// let pid = try Wait.value("the extension's pid in its log") { log.pid }
/// ```
public enum Wait {
    /// A wait whose deadline passed.
    public struct TimedOut: Error, CustomStringConvertible {
        public let awaited: String
        public let timeout: Duration
        /// What the condition saw last (its state, or the error it threw).
        public let lastSeen: String?
        public var description: String {
            "timed out after \(timeout) waiting until \(awaited)" + (lastSeen.map { "; last seen: \($0)" } ?? "")
        }
    }

    /// Polls `condition` every `poll` until it is true; throws ``TimedOut`` after `timeout`.
    /// An error the condition throws is remembered (as what was seen last) and the polling goes on.
    /// - Parameter detail: what to report as seen last when it times out (the state waited on).
    public static func until(
        _ awaited: @autoclosure () -> String, timeout: Duration = .seconds(30), poll: Duration = .milliseconds(10),
        detail: (() -> String)? = nil, _ condition: () throws -> Bool
    ) throws {
        _ = try value(awaited(), timeout: timeout, poll: poll, detail: detail) { try condition() ? true : nil }
    }

    /// Polls `produce` until it gives a value, and returns it; throws ``TimedOut`` after `timeout`.
    public static func value<T>(
        _ awaited: @autoclosure () -> String, timeout: Duration = .seconds(30), poll: Duration = .milliseconds(10),
        detail: (() -> String)? = nil, _ produce: () throws -> T?
    ) throws -> T {
        let deadline = ContinuousClock.now + timeout
        var lastError: String?
        while true {
            do {
                if let value = try produce() { return value }
                lastError = nil
            } catch {
                lastError = "\(error)"
            }
            if ContinuousClock.now >= deadline {
                throw TimedOut(awaited: awaited(), timeout: timeout, lastSeen: detail?() ?? lastError)
            }
            sleep(poll)
        }
    }

    /// ``until(_:timeout:poll:detail:_:)`` for a condition that awaits.
    public static func until(
        _ awaited: @autoclosure () -> String, timeout: Duration = .seconds(30), poll: Duration = .milliseconds(10),
        detail: (() -> String)? = nil, _ condition: () async throws -> Bool
    ) async throws {
        let deadline = ContinuousClock.now + timeout
        var lastError: String?
        while true {
            do {
                if try await condition() { return }
                lastError = nil
            } catch {
                lastError = "\(error)"
            }
            if ContinuousClock.now >= deadline {
                throw TimedOut(awaited: awaited(), timeout: timeout, lastSeen: detail?() ?? lastError)
            }
            try await Task.sleep(for: poll)
        }
    }

    /// Whether `condition` becomes true within `timeout` (polling every `poll`), for `#expect`
    /// (whose failure shows the condition awaited): `#expect(Wait.holds { … })`.
    public static func holds(
        within timeout: Duration = .seconds(10), poll: Duration = .milliseconds(10), _ condition: () -> Bool
    ) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while !condition() {
            if ContinuousClock.now >= deadline { return condition() }
            sleep(poll)
        }
        return true
    }

    /// Waits for `process` to end, at most `timeout`; when it does not, kills it (SIGKILL), reaps
    /// it and throws ``TimedOut`` naming `awaited`.
    public static func untilExit(
        of process: Process, _ awaited: @autoclosure () -> String, timeout: Duration = .seconds(120)
    ) throws {
        do {
            try until(awaited(), timeout: timeout, poll: .milliseconds(20)) { !process.isRunning }
        } catch {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            throw error
        }
        process.waitUntilExit()
    }

    /// Reads what a child process writes to `handle` (the reading end of its pipe) until `done`
    /// holds for the text read, or the pipe ends; returns the text. Throws ``TimedOut`` naming
    /// `awaited` when `timeout` passes first (a process that neither writes nor ends).
    public static func output(
        of handle: FileHandle, _ awaited: @autoclosure () -> String, timeout: Duration = .seconds(60),
        until done: (String) -> Bool
    ) throws -> String {
        let fd = handle.fileDescriptor
        let deadline = ContinuousClock.now + timeout
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !done(String(decoding: bytes, as: UTF8.self)) {
            guard ContinuousClock.now < deadline else {
                throw TimedOut(awaited: awaited(), timeout: timeout, lastSeen: String(decoding: bytes, as: UTF8.self))
            }
            var ready = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let polled = poll(&ready, 1, 200)
            if polled < 0 && errno != EINTR { break }
            guard polled > 0 else { continue }
            let n = read(fd, &buffer, buffer.count)
            if n > 0 {
                bytes += buffer[0..<n]
            } else if n == 0 || (errno != EINTR && errno != EAGAIN) {
                break  // the pipe ended: every writer has closed it
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    static func sleep(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        let microseconds = seconds * 1_000_000 + attoseconds / 1_000_000_000_000
        usleep(useconds_t(max(0, min(microseconds, 1_000_000))))
    }
}
