import CLinuxSupport
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A child process in a process group of its own, run under a deadline measured on the monotonic
/// clock, with what it prints kept up to a bound.
///
/// It is what the agent runs the downloader extension and background launches of the app with:
/// - the child leads a new process group, so that everything it starts (a grandchild that keeps
///   the output pipe open, say) is ended with it: ``wait(until:keepingLast:isCancelled:)`` sends
///   SIGKILL to the whole group when the deadline passes, when the call is cancelled, and when the
///   direct child exits;
/// - nothing waits for descendants: the output pipe is read until the direct child exits (or the
///   deadline passes), never until end-of-file;
/// - the child is *held* before it runs anything until ``release()``, so that the caller can
///   record its process group first (the agent stores it, to end it after a crash);
/// - durations are measured on `SuspendingClock` (CLOCK_MONOTONIC), which a step of the wall clock
///   does not move (nor does the time the machine sleeps count).
///
/// ```swift
/// let child = try ChildProcess.start(executable: "/usr/bin/env", arguments: ["true"], environment: [:], captureOutput: true)
/// try child.release()
/// let outcome = child.wait(until: .now + .seconds(3), keepingLast: 1 << 20)
/// ```
// Safe because: its descriptors and `var`s are used only by the one caller that starts, releases and waits for
// the child (the agent's runner, a test); other threads only call `signalGroup(_:)`, which reads `pid`, a `let`,
// and `reaped`, an `Atomic`
// (`ChildProcessConcurrencyTests.signallingFromOtherThreadsWhileTheOwnerWaitsEndsTheChild`).
public final class ChildProcess: @unchecked Sendable {
    /// The child's process ID, which is also its process group's.
    public let pid: Int32
    private let executable: String
    private var goFD: Int32
    private var execErrorFD: Int32
    private var outputFD: Int32
    private let pidFD: Int32
    /// When the child was released (it runs from then on).
    public private(set) var started: SuspendingClock.Instant = .now
    /// Set once the child was reaped: `signalGroup(_:)` reads it from any thread.
    private let reaped = Atomic<Bool>(false)

    /// How a child ended.
    public struct Outcome: Sendable, Hashable {
        /// Its exit status, when it exited.
        public var exitStatus: Int32?
        /// The signal that ended it, when one did.
        public var signal: Int32?
        /// It was still running at the deadline and was killed (with its group).
        public var timedOut = false
        /// It was still running when the caller cancelled the wait and was killed (with its group).
        public var cancelled = false
        /// The last bytes it printed, at most the bound given.
        public var output: [UInt8] = []
        /// How many bytes it printed in all (more than `output.count` when some were dropped).
        public var outputBytes = 0
        /// How long it ran, on the monotonic clock.
        public var elapsed: Duration = .zero
        /// Its largest resident set (the kernel's `ru_maxrss`), 0 when it could not be reaped.
        public var peakResidentBytes: UInt64 = 0
        /// The CPU time it used, user and system (`ru_utime` + `ru_stime`).
        public var cpuTime: Duration = .zero

        /// Whether output was dropped to keep within the bound.
        public var outputTruncated: Bool { outputBytes > output.count }
        /// It exited with status 0.
        public var succeeded: Bool { exitStatus == 0 && signal == nil && !timedOut && !cancelled }
    }

    private init(pid: Int32, executable: String, goFD: Int32, execErrorFD: Int32, outputFD: Int32) {
        self.pid = pid
        self.executable = executable
        self.goFD = goFD
        self.execErrorFD = execErrorFD
        self.outputFD = outputFD
        pidFD = clinux_pidfd_open(pid)
    }

    deinit {
        for fd in [goFD, execErrorFD, outputFD, pidFD] where fd >= 0 { close(fd) }
        if !reaped.load(ordering: .acquiring) {
            Self.signalGroup(pid, SIGKILL)
            var status: Int32 = 0
            var sig: Int32 = 0
            _ = clinux_reap(pid, &status, &sig, nil)
        }
    }

    /// Starts `executable` held (see ``release()``), standard input on `/dev/null`.
    /// - Parameters:
    ///   - captureOutput: standard output and error go to a pipe that ``wait(until:keepingLast:isCancelled:)``
    ///     reads; otherwise they are the caller's.
    /// - Throws: ``BacklotError/Code/io`` when the process cannot be created.
    public static func start(
        executable: String, arguments: [String], environment: [String: String], captureOutput: Bool
    ) throws -> ChildProcess {
        let devNull = open("/dev/null", O_RDONLY | O_CLOEXEC)
        guard devNull >= 0 else { throw SystemCall.error("open", path: "/dev/null") }
        defer { close(devNull) }
        var pipeFDs: [Int32] = [-1, -1]
        if captureOutput {
            guard clinux_pipe_cloexec(&pipeFDs) == 0 else { throw SystemCall.error("pipe2", path: executable) }
        }
        defer { if pipeFDs[1] >= 0 { close(pipeFDs[1]) } }
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.sorted { $0.key < $1.key }.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for p in argv + envp { free(p) } }
        var go: Int32 = -1
        var execError: Int32 = -1
        let out = captureOutput ? pipeFDs[1] : STDOUT_FILENO
        let err = captureOutput ? pipeFDs[1] : STDERR_FILENO
        let pid = clinux_spawn_held(executable, argv, envp, devNull, out, err, &go, &execError)
        guard pid > 0 else {
            let e = errno
            if pipeFDs[0] >= 0 { close(pipeFDs[0]) }
            throw SystemCall.error("fork", path: executable, errno: e)
        }
        if pipeFDs[0] >= 0 { _ = fcntl(pipeFDs[0], F_SETFL, fcntl(pipeFDs[0], F_GETFL) | O_NONBLOCK) }
        return ChildProcess(pid: pid, executable: executable, goFD: go, execErrorFD: execError, outputFD: pipeFDs[0])
    }

    /// Runs a program to its end, or until `deadline` (its process group is then killed), with
    /// its standard output and error captured (the last `limit` bytes kept).
    ///
    /// ```swift
    /// let outcome = try ChildProcess.run(executable: "/usr/bin/openssl", arguments: ["version"], environment: [:], until: .now + .seconds(5))
    /// ```
    /// - Throws: ``BacklotError/Code/io`` when the process cannot be created or executed.
    public static func run(
        executable: String, arguments: [String], environment: [String: String], until deadline: SuspendingClock.Instant,
        keepingLast limit: Int = 1 << 20
    ) throws -> Outcome {
        let child = try start(
            executable: executable, arguments: arguments, environment: environment, captureOutput: true)
        try child.release()
        return child.wait(until: deadline, keepingLast: limit)
    }

    /// Lets the held child execute its program.
    /// - Throws: ``BacklotError/Code/io`` when it could not be executed (the child is reaped).
    public func release() throws {
        guard goFD >= 0 else { return }
        var one: UInt8 = 1
        _ = SystemCall.writeWithoutBrokenPipeSignal(goFD, &one, 1)  // a child killed before it read the byte
        close(goFD)
        goFD = -1
        started = .now
        var e: Int32 = 0
        var n: Int
        repeat { n = read(execErrorFD, &e, MemoryLayout<Int32>.size) } while n < 0 && errno == EINTR
        close(execErrorFD)
        execErrorFD = -1
        if n == MemoryLayout<Int32>.size {
            var status: Int32 = 0
            var sig: Int32 = 0
            _ = clinux_reap(pid, &status, &sig, nil)
            reaped.store(true, ordering: .releasing)
            throw SystemCall.error("execve", path: executable, errno: e)
        }
    }

    /// Whether the child has exited (it is not reaped: ``wait(until:keepingLast:isCancelled:)`` still says how).
    public var hasExited: Bool { reaped.load(ordering: .acquiring) || clinux_has_exited(pid) != 0 }

    /// Sends `signal` to the child's whole process group.
    public func signalGroup(_ signal: Int32) {
        if !reaped.load(ordering: .acquiring) { Self.signalGroup(pid, signal) }
    }

    /// Sends `signal` to the process group `group` (one recorded earlier); false when none is left.
    @discardableResult
    public static func signalGroup(_ group: Int32, _ signal: Int32) -> Bool {
        guard group > 1 else { return false }  // never 0 (our own group) or -1 (every process)
        return kill(-group, signal) == 0
    }

    /// Waits until the direct child exits, `deadline` passes or `isCancelled` turns true (checked
    /// at least every 100 ms), then kills the child's process group (descendants end with it) and
    /// reaps the child. Output is read meanwhile, and only its last `limit` bytes are kept.
    public func wait(
        until deadline: SuspendingClock.Instant?, keepingLast limit: Int = 1 << 20,
        isCancelled: () -> Bool = { false }
    ) -> Outcome {
        var outcome = Outcome()
        var kept = OutputTail(limit: max(0, limit))
        var exited = false
        while true {
            if clinux_has_exited(pid) != 0 {
                exited = true
                break
            }
            let now = SuspendingClock.now
            if let deadline, now >= deadline {
                outcome.timedOut = true
                break
            }
            if isCancelled() {
                outcome.cancelled = true
                break
            }
            var timeout = Duration.milliseconds(pidFD >= 0 ? 100 : 20)
            if let deadline { timeout = min(timeout, deadline - now) }
            var fds: [pollfd] = []
            if pidFD >= 0 { fds.append(pollfd(fd: pidFD, events: Int16(POLLIN), revents: 0)) }
            if outputFD >= 0 { fds.append(pollfd(fd: outputFD, events: Int16(POLLIN), revents: 0)) }
            let ms = Int32(
                max(1, timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000))
            _ = poll(&fds, nfds_t(fds.count), ms)
            if outputFD >= 0, fds.last.map({ $0.revents != 0 }) == true { drainOutput(into: &kept, atMost: 1 << 20) }
        }
        Self.signalGroup(pid, SIGKILL)
        // What the child wrote before it exited; a descendant still writing is dead by now.
        if exited { drainOutput(into: &kept, atMost: 8 << 20) }
        var status: Int32 = -1
        var sig: Int32 = 0
        var usage = rusage()
        if clinux_reap(pid, &status, &sig, &usage) == 0 {
            outcome.exitStatus = status >= 0 ? status : nil
            outcome.signal = sig != 0 ? sig : nil
            outcome.peakResidentBytes = UInt64(max(0, usage.ru_maxrss)) * 1024
            func micro(_ t: timeval) -> Int64 { Int64(t.tv_sec) * 1_000_000 + Int64(t.tv_usec) }
            outcome.cpuTime = .microseconds(micro(usage.ru_utime) + micro(usage.ru_stime))
        }
        reaped.store(true, ordering: .releasing)
        outcome.elapsed = SuspendingClock.now - started
        outcome.output = kept.bytes
        outcome.outputBytes = kept.total
        if outputFD >= 0 {
            close(outputFD)
            outputFD = -1
        }
        return outcome
    }

    /// Reads what is available now (non-blocking), at most `atMost` bytes.
    private func drainOutput(into kept: inout OutputTail, atMost: Int) {
        guard outputFD >= 0 else { return }
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        var read = 0
        while read < atMost {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(outputFD, $0.baseAddress, $0.count) }
            if n > 0 {
                kept.append(buffer[0..<n])
                read += n
            } else if n < 0 && errno == EINTR {
                continue
            } else {
                if n == 0 {
                    close(outputFD)
                    outputFD = -1
                }  // end of file: every writer is gone
                return
            }
        }
    }
}

/// The last `limit` bytes of a stream, and how many there were in all.
struct OutputTail {
    let limit: Int
    private(set) var total = 0
    private var storage: [UInt8] = []

    init(limit: Int) { self.limit = limit }

    mutating func append(_ bytes: ArraySlice<UInt8>) {
        total += bytes.count
        storage.append(contentsOf: bytes.suffix(limit))
        if storage.count > 2 * limit || (limit == 0 && !storage.isEmpty) { storage.removeFirst(storage.count - limit) }
    }

    var bytes: [UInt8] { Array(storage.suffix(limit)) }
}

extension ChildProcess {
    /// The processes of process group `group` whose environment holds `NAME=value` (from `/proc`):
    /// how a recorded group is found again after a crash without signalling a program that
    /// happens to reuse its ID.
    public static func members(ofGroup group: Int32, environment name: String, value: String) -> [Int32] {
        guard group > 1, let dir = opendir("/proc") else { return [] }
        defer { closedir(dir) }
        let wanted = Array("\(name)=\(value)".utf8)
        var found: [Int32] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) {
                String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard let pid = Int32(name) else { continue }
            let stat = readProcFile("/proc/\(pid)/stat", atMost: 4096)
            // "pid (comm) state ppid pgrp …": comm may hold spaces and parentheses, so from the last ')'.
            guard let close = stat.lastIndex(of: UInt8(ascii: ")")) else { continue }
            let fields = stat[(close + 1)...].split(separator: UInt8(ascii: " "))
            guard fields.count > 2, Int32(String(decoding: fields[2], as: UTF8.self)) == group else { continue }
            let environ = readProcFile("/proc/\(pid)/environ", atMost: 1 << 20)
            if environ.split(separator: 0).contains(where: { $0.elementsEqual(wanted) }) { found.append(pid) }
        }
        return found
    }

    private static func readProcFile(_ path: String, atMost limit: Int) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return [] }
        defer { close(fd) }
        var result: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16 << 10)
        while result.count < limit {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            result.append(contentsOf: buffer[0..<n])
        }
        return result
    }
}
