#if canImport(Glibc)
import Glibc
#endif

/// The service manager's notification protocol (systemd's `sd_notify`): a process started by a
/// `Type=notify` unit tells it when it is ready (`READY=1`), what it is doing (`STATUS=…`), that
/// it is stopping (`STOPPING=1`) and, under `WatchdogSec=`, that it is still alive (`WATCHDOG=1`).
/// The messages are datagrams to the `AF_UNIX` socket named by `NOTIFY_SOCKET` (a path, or an
/// abstract name written with a leading `@`). Without that variable (not started by systemd)
/// every call does nothing.
///
/// ```swift
/// let manager = ServiceManager(environment: ProcessInfo.processInfo.environment)
/// manager?.notify(["READY=1", "STATUS=serving"])
/// if let interval = manager?.watchdogInterval { /* send WATCHDOG=1 every interval / 2 */ }
/// ```
public struct ServiceManager: Sendable {
    /// The socket's address as given (`/run/systemd/notify`, or `@name` for an abstract socket).
    public let socketName: String
    /// How often the manager expects `WATCHDOG=1` (from `WATCHDOG_USEC`), when it watches this
    /// process (`WATCHDOG_PID` absent or this process's ID); nil otherwise.
    public let watchdogInterval: Double?

    /// nil when `NOTIFY_SOCKET` is not set (or empty, or too long for a socket address: the
    /// manager would never hear the process, so it is reported as not being there).
    public init?(environment: [String: String]) {
        guard let name = environment["NOTIFY_SOCKET"], !name.isEmpty, name.utf8.count < 108,
            name.hasPrefix("/") || name.hasPrefix("@")
        else { return nil }
        socketName = name
        let watchedPID = environment["WATCHDOG_PID"].flatMap { CheckedInteger.parse($0, as: Int32.self) }
        if let usec = environment["WATCHDOG_USEC"].flatMap({ CheckedInteger.parse($0, as: UInt64.self) }), usec > 0,
            usec <= 86_400_000_000,
            watchedPID == nil || watchedPID == getpid()
        {
            watchdogInterval = Double(usec) / 1_000_000
        } else {
            watchdogInterval = nil
        }
    }

    /// Sends one notification made of `assignments` (`"READY=1"`, `"STATUS=…"`), one per line.
    /// - Throws: ``BacklotError/Code/io`` naming the socket when the datagram cannot be sent.
    public func notify(_ assignments: [String]) throws {
        let message = Array(assignments.joined(separator: "\n").utf8)
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SystemCall.error("socket", path: socketName) }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var path = Array(socketName.utf8)
        if path.first == UInt8(ascii: "@") { path[0] = 0 }  // an abstract socket: its name starts with a zero byte
        let length = withUnsafeMutableBytes(of: &address.sun_path) { raw -> Int in
            raw.copyBytes(from: path)
            return MemoryLayout<sa_family_t>.size + path.count
        }
        let sent = try SystemCall.retrying("sendto", path: socketName) {
            message.withUnsafeBytes { bytes in
                withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        sendto(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL), $0, socklen_t(length))
                    }
                }
            }
        }
        guard sent == message.count else {
            throw BacklotError(.io, "sendto sent \(sent) of \(message.count) bytes", context: socketName)
        }
    }
}
