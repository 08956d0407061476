import BacklotBasics
import BacklotTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// How tests get their ports (``FreePort``): a held port refuses connections and is never handed
/// out twice; a service that finds its port taken says so, and its start is tried on another.
@Suite(.serialized) struct FreePortTests {
    @Test func aBoundPortRefusesConnectionsWhileItIsHeld() throws {
        let held = try FreePort.bound()
        #expect(held.port != 0)
        #expect(!Nginx.accepts(held.port), "a bound socket that does not listen refuses connections")
        // Nobody else can bind it meanwhile.
        #expect(throws: BacklotError.self) { try bindTwice(held.port) }
        held.release()
    }

    @Test func reservedPortsAreOutsideTheEphemeralRangeAndNeverTwice() throws {
        let text = try String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8)
        let range = text.split(whereSeparator: \.isWhitespace).compactMap { Int($0) }
        let ports = try (0..<50).map { _ in try FreePort.reserved() }
        #expect(Set(ports.map(\.port)).count == ports.count)
        for port in ports { #expect(Int(port.port) < range[0] || Int(port.port) > range[1], "\(port.port)") }
    }

    @Test(.requires(.nginx)) func nginxOnATakenPortSaysSoAndAStartIsTriedOnAnother() throws {
        let dir = try TemporaryDirectory("free-port")
        defer { dir.remove() }
        try dir.write("www/index.html", "hello")
        // A port someone listens on: nginx fails to bind it, and says the address is in use.
        let taken = try FreePort.bound()
        let fd = taken.takeDescriptor()
        defer { close(fd) }
        #expect(listen(fd, 1) == 0)
        #expect {
            _ = try Nginx(root: dir.at("www"), workDirectory: dir.at("nginx-taken"), port: taken.port)
        } throws: { $0 is FreePort.InUse }
        // Through FreePort.starting, a start that finds its port taken is tried again on another one.
        var tried: [UInt16] = []
        let started = try FreePort.starting("nginx") { port -> Nginx in
            tried.append(port)
            return try Nginx(
                root: dir.at("www"), workDirectory: dir.at("nginx-\(tried.count)"),
                port: tried.count == 1 ? taken.port : port)
        }
        defer { started.stop() }
        #expect(tried.count == 2 && started.port == tried[1] && started.port != taken.port, "\(tried)")
        #expect(started.waitUntilServing("index.html"))
    }

    /// Binds `port` on 127.0.0.1 (with SO_REUSEADDR, as services do), closing it at once; throws when it cannot.
    func bindTwice(_ port: UInt16) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_addr.s_addr = inet_addr("127.0.0.1")
        a.sin_port = port.bigEndian
        let bound = withUnsafePointer(to: &a) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0 else { throw SystemCall.error("bind", path: "127.0.0.1:\(port)") }
    }
}
