import BacklotBasics
import BacklotTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The systemd units in contrib/systemd as `scripts/install` writes them, and `backlot serve`
/// speaking the service manager's notification protocol (`Type=notify`, `WatchdogSec=`).
@Suite(.serialized) struct SystemdUnitTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    /// The install recipe puts the binary and both units under a prefix, with ExecStart naming
    /// that binary, and `systemd-analyze verify` finds nothing to say about either unit.
    @Test func installedUnitsVerify() throws {
        let dir = try TemporaryDirectory("units")
        defer { dir.remove() }
        let prefix = dir.at("prefix")
        let (status, output) = try runToEnd(
            Self.root + "/scripts/install", ["--prefix", prefix, "--binary", ProcessTests.binary])
        #expect(status == 0, "scripts/install: \(output)")
        #expect(FileManager.default.isExecutableFile(atPath: prefix + "/bin/backlot"))
        // The docs, with the pictures dashboard.md links beside them.
        #expect(FileManager.default.fileExists(atPath: prefix + "/share/doc/backlot/images/dashboard-apps.png"))
        let serve = prefix + "/lib/systemd/system/backlot-serve.service"
        let agent = prefix + "/lib/systemd/user/backlot-agent@.service"
        for unit in [serve, agent] {
            let text = try String(contentsOfFile: unit, encoding: .utf8)
            #expect(text.contains("ExecStart=\(prefix)/bin/backlot "), "\(unit) must start the installed binary")
            #expect(!text.contains("/usr/local/bin"), "\(unit) still names /usr/local/bin")
        }
        // An instance of the agent's template, as `systemctl --user enable backlot-agent@mygame` makes.
        let instance = dir.at("prefix/lib/systemd/user/backlot-agent@mygame.service")
        try FileManager.default.createSymbolicLink(atPath: instance, withDestinationPath: "backlot-agent@.service")
        for unit in [serve, instance] {
            let (verified, complaints) = try runToEnd("/usr/bin/systemd-analyze", ["verify", unit])
            #expect(verified == 0 && complaints.isEmpty, "systemd-analyze verify \(unit): \(complaints)")
        }
        // A unit naming a binary that is not there is refused: the check above can fail.
        let broken = dir.at("broken.service")
        try String(contentsOfFile: serve, encoding: .utf8).replacingOccurrences(
            of: prefix + "/bin/backlot", with: dir.at("nowhere/backlot")
        )
        .write(toFile: broken, atomically: true, encoding: .utf8)
        #expect(try runToEnd("/usr/bin/systemd-analyze", ["verify", broken]).0 != 0)
    }

    /// The server's unit is hardened: `systemd-analyze security` rates its exposure at most 5.
    @Test func theServerUnitIsHardened() throws {
        let unit = Self.root + "/contrib/systemd/backlot-serve.service"
        let (status, output) = try runToEnd(
            "/usr/bin/systemd-analyze", ["security", "--offline=true", "--no-pager", unit])
        #expect(status == 0, "\(output)")
        guard let line = output.split(separator: "\n").first(where: { $0.contains("Overall exposure level") }),
            let number = line.split(separator: ":").last?.split(separator: " ").first, let exposure = Double(number)
        else {
            Issue.record("no exposure level in: \(output)")
            return
        }
        #expect(exposure <= 5, "exposure \(exposure): \(line)")
        for setting in [
            "ProtectSystem=strict", "ProtectHome=yes", "NoNewPrivileges=yes", "PrivateTmp=yes", "User=backlot",
            "ReadWritePaths=/var/lib/backlot", "Type=notify", "WatchdogSec=",
        ] {
            #expect(try String(contentsOfFile: unit, encoding: .utf8).contains(setting), "the unit lacks \(setting)")
        }
    }

    /// `backlot serve` under NOTIFY_SOCKET and WATCHDOG_USEC, as systemd starts it: READY=1 with
    /// its status and process ID once it serves, WATCHDOG=1 at least every half interval while it
    /// answers its own probe, STOPPING=1 on SIGTERM.
    @Test func serveNotifiesReadinessAndFeedsTheWatchdog() throws {
        let dir = try TemporaryDirectory("notify")
        defer { dir.remove() }
        let socketPath = dir.at("notify.sock")
        let receiver = try DatagramReceiver(path: socketPath)
        let server = try ServerProcessTests.Server(
            data: dir.at("data"), tls: "auto",
            environment: ["NOTIFY_SOCKET": socketPath, "WATCHDOG_USEC": "1000000"])
        var messages: [String] = []
        while messages.filter({ $0 == "WATCHDOG=1" }).count < 3, let m = receiver.next(timeout: 10) {
            messages.append(m)
        }
        let ready = messages.first { $0.contains("READY=1") }
        #expect(ready != nil, "no READY=1 in \(messages)")
        #expect(ready?.contains("STATUS=serving \(server.baseURL)") == true)
        #expect(ready?.contains("MAINPID=\(server.process.processIdentifier)") == true)
        #expect(messages.filter { $0 == "WATCHDOG=1" }.count >= 3, "the watchdog was not fed: \(messages)")
        #expect(messages.firstIndex { $0.contains("READY=1") } ?? .max < messages.firstIndex(of: "WATCHDOG=1") ?? -1)
        kill(server.process.processIdentifier, SIGTERM)
        var stopping = false
        while !stopping, let m = receiver.next(timeout: 10) { stopping = m.contains("STOPPING=1") }
        server.process.waitUntilExit()
        #expect(stopping, "no STOPPING=1 on SIGTERM")
        #expect(server.process.terminationStatus == 0)
    }
}

/// A Unix datagram socket bound at a path: what systemd listens on for notifications.
final class DatagramReceiver {
    let fd: Int32
    let path: String

    init(path: String) throws {
        self.path = path
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SystemCall.error("socket", path: path) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard bound == 0 else { throw SystemCall.error("bind", path: path) }
    }

    /// The next datagram, or nil after `timeout` seconds without one.
    func next(timeout: Int32) -> String? {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&p, 1, timeout * 1000) == 1 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = recv(fd, &buffer, buffer.count, 0)
        return n > 0 ? String(decoding: buffer[..<n], as: UTF8.self) : nil
    }

    deinit {
        close(fd)
        unlink(path)
    }
}
