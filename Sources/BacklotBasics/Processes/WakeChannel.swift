#if canImport(Glibc)
import Glibc
#endif

/// A named FIFO that one process sleeps on and any other process pokes: how the background agent
/// sleeps until its next due time yet wakes at once for a `notify`, a download an app scheduled,
/// a task an app submitted, or its own stop.
///
/// The sleeper opens the FIFO read-write and non-blocking, so it never sees end-of-file and never
/// blocks on open; ``poke(path:)`` writes one byte without blocking, and does nothing when no one
/// sleeps on it (or the FIFO is full: one pending byte is enough to wake the sleeper).
///
/// ```swift
/// let channel = try WakeChannel(path: layout.agentWakeChannel)   // the agent (ContainerLayout names the path)
/// _ = channel.wait(seconds: 30)                           // in the agent
/// WakeChannel.poke(path: layout.agentWakeChannel)                  // in notify, or the app
/// ```
public final class WakeChannel: Sendable {
    public let path: String
    private let fd: Int32

    /// Creates the FIFO (mode 0600) if it is missing and opens it.
    /// - Throws: ``BacklotError/Code/io`` when it cannot be made or opened, or when something
    ///   other than a FIFO has its name.
    public init(path: String) throws {
        self.path = path
        if mkfifo(path, 0o600) != 0 && errno != EEXIST { throw SystemCall.error("create the wake-up FIFO", path: path) }
        let fd = try SystemCall.retrying("open", path: path) {
            open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW)
        }
        var st = stat()
        guard fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFIFO else {
            close(fd)
            throw BacklotError(.io, "is not a FIFO", context: path, hint: "remove it; the agent makes it again")
        }
        self.fd = fd
    }

    deinit { close(fd) }

    /// Sleeps until poked or until `seconds` have passed (a relative, monotonic wait), then
    /// empties the FIFO. Returns whether it was poked.
    @discardableResult
    public func wait(seconds: Double) -> Bool {
        let milliseconds = seconds.isFinite ? Int32(max(0, min(seconds * 1000, 86_400_000))) : 86_400_000
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        var result: Int32
        repeat { result = poll(&entry, 1, milliseconds) } while result < 0 && errno == EINTR
        guard result > 0 else { return false }
        var buffer = [UInt8](repeating: 0, count: 256)
        while read(fd, &buffer, buffer.count) > 0 {}
        return true
    }

    /// Wakes this channel's sleeper (from its own process, for example when it stops).
    public func poke() {
        var byte: UInt8 = 1
        _ = SystemCall.writeWithoutBrokenPipeSignal(fd, &byte, 1)
    }

    /// Wakes whoever sleeps on the FIFO at `path`; nothing happens when there is none.
    public static func poke(path: String) {
        let fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { return }  // ENXIO: nobody reads it; ENOENT: no agent ever ran here
        var st = stat()
        if fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFIFO {
            var byte: UInt8 = 1
            // the agent may stop between the open and the write
            _ = SystemCall.writeWithoutBrokenPipeSignal(fd, &byte, 1)
        }
        close(fd)
    }
}
