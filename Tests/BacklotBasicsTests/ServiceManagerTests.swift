import BacklotBasics
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The service manager's notification protocol as systemd defines it: which environments mean
/// "started by systemd", the watchdog interval, and datagrams to path and abstract sockets.
@Suite struct ServiceManagerTests {
    @Test func theEnvironmentSaysWhetherAndHowOftenToNotify() {
        #expect(ServiceManager(environment: [:]) == nil)
        #expect(ServiceManager(environment: ["NOTIFY_SOCKET": ""]) == nil)
        #expect(ServiceManager(environment: ["NOTIFY_SOCKET": "relative/path"]) == nil)
        #expect(
            ServiceManager(environment: ["NOTIFY_SOCKET": "/" + String(repeating: "a", count: 200)]) == nil,
            "longer than sun_path")
        let plain = ServiceManager(environment: ["NOTIFY_SOCKET": "/run/systemd/notify"])
        #expect(plain?.watchdogInterval == nil)
        #expect(
            ServiceManager(environment: ["NOTIFY_SOCKET": "@abstract", "WATCHDOG_USEC": "30000000"])?.watchdogInterval
                == 30)
        // The watchdog is this process's only when WATCHDOG_PID is absent or names it.
        #expect(
            ServiceManager(environment: [
                "NOTIFY_SOCKET": "/n", "WATCHDOG_USEC": "1000000", "WATCHDOG_PID": "\(getpid())",
            ])?.watchdogInterval == 1)
        #expect(
            ServiceManager(environment: [
                "NOTIFY_SOCKET": "/n", "WATCHDOG_USEC": "1000000", "WATCHDOG_PID": "\(getpid() + 1)",
            ])?.watchdogInterval == nil)
        for bad in ["0", "-1", "1e6", "99999999999999999999", ""] {
            #expect(
                ServiceManager(environment: ["NOTIFY_SOCKET": "/n", "WATCHDOG_USEC": bad])?.watchdogInterval == nil,
                "WATCHDOG_USEC=\(bad)")
        }
    }

    @Test func notificationsReachPathAndAbstractSockets() throws {
        let path = NSTemporaryDirectory() + "backlot-notify-\(getpid()).sock"
        let abstract = "@backlot-notify-\(getpid())"
        for name in [path, abstract] {
            let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
            #expect(fd >= 0)
            defer {
                close(fd)
                if name == path { unlink(path) }
            }
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            var bytes = Array(name.utf8)
            if bytes[0] == UInt8(ascii: "@") { bytes[0] = 0 }
            withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
            let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count)
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
            }
            #expect(bound == 0)
            let manager = try #require(ServiceManager(environment: ["NOTIFY_SOCKET": name]))
            try manager.notify(["READY=1", "STATUS=serving"])
            var buffer = [UInt8](repeating: 0, count: 256)
            let n = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            #expect(n > 0 && String(decoding: buffer[..<max(0, n)], as: UTF8.self) == "READY=1\nSTATUS=serving")
        }
        // Nobody listening: an error naming the socket, not a crash.
        #expect(throws: BacklotError.self) {
            try ServiceManager(environment: ["NOTIFY_SOCKET": path])!.notify(["READY=1"])
        }
    }
}
