import BacklotBasics
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Debian's nginx serving a folder on loopback, as a real peer for tests (parity, a slow CDN).
public final class Nginx: Sendable {
    public let port: UInt16
    public let process: Process
    public let errorLog: String
    /// Who the workers run as: `root` (by default, when the test runs as root, so that they read a
    /// tree under a private temporary folder), `nobody`, or the current user.
    public let workerUser: String
    /// What nginx logged (why it would not start, why it refused a file).
    public var errorLogText: String { (try? String(contentsOfFile: errorLog, encoding: .utf8)) ?? "" }

    /// `http://127.0.0.1:PORT/`.
    public var baseURL: String { "http://127.0.0.1:\(port)/" }

    /// Starts nginx with `root` as its document root, its files in `workDirectory`, and waits
    /// until it listens.
    /// - Parameter limitRate: nginx's `limit_rate` per connection (such as "30k"), or nil.
    /// - Parameter port: the port to listen on; by default one from ``FreePort`` (another is tried
    ///   when nginx finds it taken). A port given is the caller's: held by a ``FreePort`` until now, say.
    /// - Parameter unprivilegedWorkers: run the workers as `nobody` when the test runs as root, as
    ///   a production nginx or a CDN origin would (the tree must then be world-readable).
    /// - Throws: ``Requirement/Missing`` without nginx; what nginx logged when it does not start.
    public init(
        root: String, workDirectory dir: String, limitRate: String? = nil, port: UInt16? = nil,
        unprivilegedWorkers: Bool = false
    ) throws {
        let nginx = try Requirement.nginx.path()
        let errorLog = dir + "/error.log"
        self.errorLog = errorLog
        try FileManager.default.createDirectory(atPath: dir + "/tmp", withIntermediateDirectories: true)
        // As root, the workers run as root too (so that they read a tree under a private temporary
        // folder), unless asked to run them as nobody.
        let asRoot = getuid() == 0
        workerUser =
            asRoot ? (unprivilegedWorkers ? "nobody" : "root") : String(cString: getpwuid(getuid())!.pointee.pw_name)
        let user = asRoot ? (unprivilegedWorkers ? "user nobody nogroup;" : "user root;") : ""
        let launch = { (port: UInt16) throws -> Process in
            try """
            daemon off;
            \(user)
            worker_processes 1;
            pid \(dir)/nginx.pid;
            error_log \(errorLog);
            events { worker_connections 64; }
            http {
                access_log off;
                client_body_temp_path \(dir)/tmp;
                proxy_temp_path \(dir)/tmp;
                fastcgi_temp_path \(dir)/tmp;
                scgi_temp_path \(dir)/tmp;
                uwsgi_temp_path \(dir)/tmp;
                server {
                    listen 127.0.0.1:\(port);
                    root \(root);
                    \(limitRate.map { "limit_rate \($0);" } ?? "")
                }
            }
            """.write(toFile: dir + "/nginx.conf", atomically: true, encoding: .utf8)
            return try Self.start(
                nginx, ["-c", dir + "/nginx.conf", "-p", dir, "-e", errorLog], port: port, errorLog: errorLog,
                pidFile: dir + "/nginx.pid")
        }
        if let port {
            self.port = port
            process = try launch(port)
        } else {
            (self.port, process) = try FreePort.starting("nginx") { port in (port, try launch(port)) }
        }
    }

    /// Starts nginx (its output never the test's own: a master left behind by a crashed test would
    /// hold it open and keep `swift test` waiting for its end forever; what nginx says goes to its
    /// error log) and waits until it listens on `port`: its pid file written (nginx writes it once
    /// it has bound its ports; a connection accepted proves nothing alone, since whoever holds the
    /// port accepts it too) and a connection accepted.
    /// - Throws: ``FreePort/InUse`` when nginx found the port taken; what it logged when it ended
    ///   otherwise, or did not listen within 20 s (it is then stopped).
    static func start(
        _ executable: String, _ arguments: [String], port: UInt16, errorLog: String, pidFile: String
    ) throws -> Process {
        // What an earlier try left is not this one's.
        try? FileManager.default.removeItem(atPath: errorLog)
        try? FileManager.default.removeItem(atPath: pidFile)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let log = { (try? String(contentsOfFile: errorLog, encoding: .utf8)) ?? "" }
        do {
            try Wait.until("nginx listens on 127.0.0.1:\(port)", timeout: .seconds(20), detail: log) {
                if !process.isRunning { return true }
                return FileManager.default.fileExists(atPath: pidFile) && accepts(port)
            }
        } catch {
            process.terminate()
            process.waitUntilExit()
            throw error
        }
        if !process.isRunning {
            process.waitUntilExit()
            let text = log()
            if FreePort.saysAddressInUse(text) { throw FreePort.InUse(port: port, detail: String(text.suffix(500))) }
            throw BacklotError(
                .io, "nginx ended at its start (status \(process.terminationStatus)): \(text.suffix(2000))",
                context: errorLog)
        }
        return process
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

    public func stop() {
        process.terminate()
        process.waitUntilExit()
    }
}
