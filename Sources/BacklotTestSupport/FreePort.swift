import BacklotBasics
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A TCP port on 127.0.0.1 for a test, held by a socket bound to it (not listening: a connection
/// to it is refused) until it is handed over. Tests never hard-code a port, and never pick one by
/// binding, reading and closing: between the close and the service's own bind, anything may take
/// it.
///
/// - Where the caller can take a socket (it only needs a port nothing answers on, or it listens
///   itself), ``bound()`` binds port 0 and keeps the socket for as long as the ``FreePort`` lives.
/// - A service that binds its port itself (nginx, PostgreSQL, `backlot serve --metrics-listen`) is
///   started through ``starting(_:attempts:_:)``: the port comes from ``reserved()``, outside the
///   kernel's ephemeral range (so that no outgoing connection and no `bind` to port 0 is given it
///   meanwhile, and the service can be restarted on it), is released just before the start, and a
///   start that fails because the address is in use is tried again with another port.
///
/// ```swift
/// let nobody = try FreePort.bound()            // connections to nobody.port are refused while it lives
/// let nginx = try FreePort.starting("nginx") { port in try startNginx(port) }  // throws FreePort.InUse to retry
/// ```
public final class FreePort: Sendable {  // the descriptor is closed once, under the lock
    public let port: UInt16
    private let descriptor: Mutex<Int32>

    private init(port: UInt16, descriptor: Int32) {
        self.port = port
        self.descriptor = Mutex(descriptor)
    }

    deinit { release() }

    /// Closes the socket, so that a service can bind the port (later calls do nothing).
    public func release() {
        descriptor.withLock { fd in
            if fd >= 0 { close(fd) }
            fd = -1
        }
    }

    /// Hands the bound socket over (the caller closes it, or listens on it); the port is no longer this object's.
    public func takeDescriptor() -> Int32 {
        descriptor.withLock { fd in
            defer { fd = -1 }
            return fd
        }
    }

    /// Thrown by a start given to ``starting(_:attempts:_:)`` when its service could not bind the port.
    public struct InUse: Error, CustomStringConvertible {
        public let port: UInt16
        public let detail: String
        public init(port: UInt16, detail: String) {
            self.port = port
            self.detail = detail
        }
        public var description: String { "127.0.0.1:\(port) is in use: \(detail)" }
    }

    /// Whether what a service logged says it could not bind because the address is in use.
    public static func saysAddressInUse(_ text: String) -> Bool {
        text.contains("Address already in use") || text.contains("(98:") || text.contains("EADDRINUSE")
    }

    /// A port the kernel chose (bind to port 0), held by this object's socket.
    public static func bound() throws -> FreePort {
        let fd = try socketBound(to: 0)
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard named == 0 else {
            let error = SystemCall.error("getsockname", path: "127.0.0.1:0")
            close(fd)
            throw error
        }
        return FreePort(port: UInt16(bigEndian: address.sin_port), descriptor: fd)
    }

    /// A socket listening on 127.0.0.1 at a port the kernel chose, for a server the test runs
    /// itself (``DripServer``, ``ScriptedHTTPServer``): the descriptor is the caller's to close.
    public static func listening(backlog: Int32 = 16) throws -> (descriptor: Int32, port: UInt16) {
        let bound = try bound()
        let fd = bound.takeDescriptor()
        guard listen(fd, backlog) == 0 else {
            let error = SystemCall.error("listen", path: "127.0.0.1:\(bound.port)")
            close(fd)
            throw error
        }
        return (fd, bound.port)
    }

    /// Ports handed out by ``reserved()`` in this process (never twice).
    private static let handedOut = Mutex<Set<UInt16>>([])

    /// A port outside the kernel's ephemeral range (`net.ipv4.ip_local_port_range`), which no
    /// other ``reserved()`` of this process has had, held by this object's socket until ``release()``.
    public static func reserved() throws -> FreePort {
        let (low, high) = ephemeralRange()
        // Below the ephemeral range when there is room (as scripts/services picks its ports), else above it.
        let pool: ClosedRange<Int> = low > 12_000 ? 10_000...(low - 1) : min(high + 1, 65_535)...65_535
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<500 {
            let candidate = UInt16(Int.random(in: pool, using: &generator))
            let fresh = handedOut.withLock { $0.insert(candidate).inserted }
            guard fresh, let fd = try? socketBound(to: candidate) else { continue }
            return FreePort(port: candidate, descriptor: fd)
        }
        throw BacklotError(.io, "no free TCP port found on 127.0.0.1 in \(pool)")
    }

    /// Starts a service that binds its port itself: `start` is given a port from ``reserved()``,
    /// released just before; when it throws ``InUse`` (the service found the address taken), it is
    /// tried again with another port, `attempts` times at most. Any other error ends the tries.
    public static func starting<T>(
        _ service: String, attempts: Int = 10, _ start: (UInt16) throws -> T
    ) throws -> T {
        var reasons: [String] = []
        for _ in 0..<max(1, attempts) {
            let port = try reserved()
            port.release()
            do {
                return try start(port.port)
            } catch let error as InUse {
                reasons.append(error.description)
            }
        }
        throw BacklotError(
            .io, "\(service) could not bind a port in \(attempts) tries: \(reasons.joined(separator: "; "))",
            context: "127.0.0.1")
    }

    /// The kernel's ephemeral range (32768–60999 when it cannot be read).
    static func ephemeralRange() -> (Int, Int) {
        let text = (try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8)) ?? ""
        let numbers = text.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" }).compactMap { Int($0) }
        return numbers.count == 2 ? (numbers[0], numbers[1]) : (32_768, 60_999)
    }

    /// A TCP socket bound to 127.0.0.1:`port`, without SO_REUSEADDR: nothing else can bind the
    /// port while it is held (not even a service that sets SO_REUSEADDR), and a port still in use
    /// by any connection (even one in TIME_WAIT) is not taken.
    private static func socketBound(to port: UInt16) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SystemCall.error("socket", path: "127.0.0.1:\(port)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = port.bigEndian
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0 else {
            let error = SystemCall.error("bind", path: "127.0.0.1:\(port)")
            close(fd)
            throw error
        }
        return fd
    }
}
