import BacklotBasics
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A bound, listening TCP socket, made before anything else so that a server that cannot listen
/// stops before it touches its data folder. ``HTTPServer`` takes it over.
///
/// ```swift
/// let socket = try ListeningSocket(host: "127.0.0.1", port: 0)
/// print(socket.port)
/// ```
public final class ListeningSocket: Sendable {
    /// The port actually bound (the one asked for, or a free one for 0).
    public let port: UInt16
    /// The address asked for.
    public let host: String
    private let descriptor: Atomic<Int32>

    /// Binds and listens.
    /// - Throws: ``BacklotError/Code/invalidInput`` for a host that is not an IPv4 or IPv6 address,
    ///   ``BacklotError/Code/io`` when the address cannot be bound (in use, not ours).
    public init(host: String, port: UInt16) throws {
        var v4 = sockaddr_in()
        var v6 = sockaddr_in6()
        let family: Int32
        if inet_pton(AF_INET, host, &v4.sin_addr) == 1 {
            family = AF_INET
            v4.sin_family = sa_family_t(AF_INET)
            v4.sin_port = port.bigEndian
        } else if inet_pton(AF_INET6, host, &v6.sin6_addr) == 1 {
            family = AF_INET6
            v6.sin6_family = sa_family_t(AF_INET6)
            v6.sin6_port = port.bigEndian
        } else {
            throw BacklotError(
                .invalidInput, "'\(host)' is not an IPv4 or IPv6 address", context: "--host",
                hint: "give an address such as 127.0.0.1 or ::1 (host names are not resolved)")
        }
        let fd = try SystemCall.retrying("socket", path: host) {
            socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        let bound: Int32 =
            family == AF_INET
            ? withUnsafePointer(to: &v4) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            : withUnsafePointer(to: &v6) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size))
                }
            }
        // A deep accept queue: thousands of clients may connect at once (the kernel caps it at somaxconn).
        guard bound == 0, listen(fd, Self.backlog) == 0 else {
            let err = errno
            close(fd)
            throw BacklotError(
                .io, "could not listen on \(host) port \(port): \(SystemCall.describe(err))", context: "backlot serve",
                hint: "the port may be in use (try --port 0 for a free one)")
        }
        var actual = sockaddr_in6()
        var length = socklen_t(MemoryLayout<sockaddr_in6>.size)
        _ = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        // sin_port and sin6_port lie at the same offset.
        self.port = UInt16(bigEndian: actual.sin6_port)
        self.host = host
        descriptor = Atomic(fd)
    }

    /// Connections the kernel queues before they are accepted.
    static let backlog: Int32 = 4096

    /// Hands the descriptor over (to the server, which closes it); later calls return -1.
    func take() -> Int32 { descriptor.exchange(-1, ordering: .acquiringAndReleasing) }

    deinit {
        let fd = descriptor.load(ordering: .acquiring)
        if fd >= 0 { close(fd) }
    }
}
