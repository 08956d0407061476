import BacklotBasics
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Debian's nginx serving a folder on loopback, as a real peer for tests (parity, a slow CDN),
/// started and stopped by `scripts/services` (scripts/lib/nginx.sh) as the demo and the benchmarks
/// start theirs, watching the test process: a test that dies leaves no nginx behind.
public final class Nginx: Sendable {
    public let port: UInt16
    /// The folder `scripts/services` runs it in: its configuration, pid file and error log are in `nginx/`.
    public let folder: String
    /// Who the workers run as: `root` (by default, when the test runs as root, so that they read a
    /// tree under a private temporary folder), `nobody`, or the current user.
    public let workerUser: String
    public var errorLog: String { folder + "/nginx/error.log" }
    /// What nginx logged (why it would not start, why it refused a file).
    public var errorLogText: String { (try? String(contentsOfFile: errorLog, encoding: .utf8)) ?? "" }

    /// `http://127.0.0.1:PORT/`.
    public var baseURL: String { "http://127.0.0.1:\(port)/" }

    /// Starts nginx with `root` as its document root, in `workDirectory`, and waits until it listens.
    /// - Parameter limitRate: nginx's `limit_rate` per connection (such as "30k"), or nil.
    /// - Parameter port: the port to listen on; by default one from ``FreePort`` (another is tried
    ///   when nginx finds it taken). A port given is the caller's: held by a ``FreePort`` until now, say.
    /// - Parameter unprivilegedWorkers: run the workers as `nobody` when the test runs as root, as
    ///   a production nginx or a CDN origin would (the tree must then be world-readable).
    /// - Throws: ``Requirement/Missing`` without nginx; ``FreePort/InUse`` when `port` is taken;
    ///   what `scripts/services` printed when nginx does not start.
    public init(
        root: String, workDirectory dir: String, limitRate: String? = nil, port: UInt16? = nil,
        unprivilegedWorkers: Bool = false
    ) throws {
        _ = try Requirement.nginx.path()
        folder = dir
        // As root, the workers run as root too (so that they read a tree under a private temporary
        // folder), unless asked to run them as nobody.
        let asRoot = getuid() == 0
        workerUser =
            asRoot ? (unprivilegedWorkers ? "nobody" : "root") : String(cString: getpwuid(getuid())!.pointee.pw_name)
        let user = asRoot ? (unprivilegedWorkers ? "user nobody nogroup;" : "user root;") : ""
        let template = dir + "/nginx-template.conf"
        try FileSystem.makeDirectories(dir)
        try """
        \(user)
        worker_processes 1;
        events { worker_connections 64; }
        http {
            access_log off;
            \(Self.temporaryPaths)
            server {
                listen @LISTEN@;
                root \(root);
                \(limitRate.map { "limit_rate \($0);" } ?? "")
            }
        }
        """.write(toFile: template, atomically: true, encoding: .utf8)
        if let port {
            try Self.start(in: dir, template: template, port: port)
            self.port = port
        } else {
            self.port = try FreePort.starting("nginx") { port in
                try Self.start(in: dir, template: template, port: port)
                return port
            }
        }
    }

    /// Starts nginx from `template` in `folder` on `port` (`scripts/services start nginx`, its
    /// `@LISTEN@`, `@PREFIX@` and each `@NAME@` of `values` filled in), watching this process, and
    /// waits until it answers.
    /// - Throws: ``FreePort/InUse`` when nginx found the port taken; what `scripts/services`
    ///   printed when it does not start otherwise.
    public static func start(
        in folder: String, template: String, port: UInt16, values: [String: String] = [:]
    ) throws {
        do {
            try ServicesScript.run(
                [
                    "start", "nginx", folder, "--config", template, "--port", String(port), "--owner",
                    String(getpid()),
                ] + values.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }, folder: folder)
        } catch let error as BacklotError where FreePort.saysAddressInUse(error.message) {
            throw FreePort.InUse(port: port, detail: String(error.message.suffix(500)))
        }
        // `daemon on`: nginx has bound its port before its command returns.
        do {
            try Wait.until("nginx listens on 127.0.0.1:\(port)", timeout: .seconds(20)) { accepts(port) }
        } catch {
            stop(in: folder)
            throw error
        }
    }

    /// The `http` block's lines that put every temporary file of nginx in its folder (`@PREFIX@/tmp`,
    /// which `scripts/services` makes): Debian's defaults are under /var/lib/nginx.
    public static let temporaryPaths = ["client_body", "proxy", "fastcgi", "scgi", "uwsgi"].map {
        "\($0)_temp_path @PREFIX@/tmp;"
    }.joined(separator: " ")

    /// Stops nginx at once (connections still open are cut) and what watches it (`scripts/services stop --now`).
    public static func stop(in folder: String) {
        _ = try? ServicesScript.run(["stop", folder, "--now"], folder: folder)
    }

    /// Whether something accepts a TCP connection on 127.0.0.1:`port` now.
    public static func accepts(_ port: UInt16) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_addr.s_addr = inet_addr("127.0.0.1")
        a.sin_port = port.bigEndian
        return withUnsafePointer(to: &a) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        } == 0
    }

    /// Waits until `path` answers 200 (true), or 10 s have passed (false) (curl, through
    /// ``ChildProcess``, each try under a deadline of its own).
    public func waitUntilServing(_ path: String) -> Bool {
        Wait.holds(within: .seconds(10), poll: .milliseconds(20)) {
            let answer = try? ChildProcess.run(
                executable: "/usr/bin/curl",
                // HEAD: a large file behind `limit_rate` answers at once.
                arguments: ["-s", "-I", "-o", "/dev/null", "--max-time", "2", "-w", "%{http_code}", baseURL + path],
                environment: [:], until: .now + .seconds(5), keepingLast: 64)
            guard let answer, answer.succeeded else { return false }
            return String(decoding: answer.output, as: UTF8.self) == "200"
        }
    }

    public func stop() { Self.stop(in: folder) }
}
