import BacklotBasics
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Debian's nginx serving a folder on loopback, as a real peer for tests (parity, a slow CDN).
public final class Nginx: @unchecked Sendable {
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

    /// A port nobody listens on now (nginx needs a number; tests never hard-code one).
    public static func freePort() -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_addr.s_addr = inet_addr("127.0.0.1")
        _ = withUnsafePointer(to: &a) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &a) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) }
        }
        return UInt16(bigEndian: a.sin_port)
    }

    /// Starts nginx with `root` as its document root, its files in `workDirectory`.
    /// - Parameter limitRate: nginx's `limit_rate` per connection (such as "30k"), or nil.
    /// - Parameter port: the port to listen on (a free one by default).
    /// - Parameter unprivilegedWorkers: run the workers as `nobody` when the test runs as root, as
    ///   a production nginx or a CDN origin would (the tree must then be world-readable).
    public init(
        root: String, workDirectory dir: String, limitRate: String? = nil, port: UInt16? = nil,
        unprivilegedWorkers: Bool = false
    ) throws {
        self.port = port ?? Self.freePort()
        errorLog = dir + "/error.log"
        try FileManager.default.createDirectory(atPath: dir + "/tmp", withIntermediateDirectories: true)
        // As root, the workers run as root too (so that they read a tree under a private temporary
        // folder), unless asked to run them as nobody.
        let asRoot = getuid() == 0
        workerUser =
            asRoot ? (unprivilegedWorkers ? "nobody" : "root") : String(cString: getpwuid(getuid())!.pointee.pw_name)
        let user = asRoot ? (unprivilegedWorkers ? "user nobody nogroup;" : "user root;") : ""
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
                listen 127.0.0.1:\(self.port);
                root \(root);
                \(limitRate.map { "limit_rate \($0);" } ?? "")
            }
        }
        """.write(toFile: dir + "/nginx.conf", atomically: true, encoding: .utf8)
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/nginx")
        process.arguments = ["-c", dir + "/nginx.conf", "-p", dir, "-e", errorLog]
        // Never the test's own output: a master left behind by a crashed test would hold it open
        // and keep `swift test` waiting for its end forever. What nginx says goes to its error log.
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
    }

    /// Waits until `path` answers 200 (true), or about 4 s (curl, through ``ChildProcess``, each
    /// try under a deadline of its own).
    public func waitUntilServing(_ path: String) -> Bool {
        for _ in 0..<200 {
            let answer = try? ChildProcess.run(
                executable: "/usr/bin/curl",
                // HEAD: a large file behind `limit_rate` answers at once.
                arguments: ["-s", "-I", "-o", "/dev/null", "--max-time", "2", "-w", "%{http_code}", baseURL + path],
                environment: [:], until: .now + .seconds(5), keepingLast: 64)
            if let answer, answer.succeeded, String(decoding: answer.output, as: UTF8.self) == "200" { return true }
            usleep(20_000)
        }
        return false
    }

    public func stop() {
        process.terminate()
        process.waitUntilExit()
    }
}
