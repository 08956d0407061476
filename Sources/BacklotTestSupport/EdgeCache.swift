import BacklotBasics
import BacklotProtocol
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Debian's nginx running the project's own `contrib/nginx/edge.conf` (the configuration operators
/// install) in front of an origin: `backlot serve` or an S3 bucket holding the published tree.
///
/// ```swift
/// let edge = try EdgeCache(origin: "127.0.0.1:\(server.port)", originPath: "", workDirectory: dir.at("edge"))
/// defer { edge.stop() }
/// // clients use edge.baseURL + "v1/apps/APP/CHANNEL/catalog.json"
/// ```
public final class EdgeCache: Sendable {
    public let port: UInt16
    /// The folder `scripts/services` runs it in (its configuration and error log are in `nginx/`)
    /// and its cache's.
    public let directory: String
    public var errorLog: String { directory + "/nginx/error.log" }

    /// `http://127.0.0.1:PORT/`.
    public var baseURL: String { "http://127.0.0.1:\(port)/" }

    /// The configuration shipped in the repository.
    public static let configurationTemplate = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("contrib/nginx/edge.conf").path

    /// Renders `contrib/nginx/edge.conf` for `origin` (`host:port`) and the tree's path there
    /// (`/bucket/prefix`, or "" for `backlot serve`), starts nginx with it on a port from
    /// ``FreePort`` (another when nginx finds it taken), and waits until it listens.
    /// Started as `make demo-cluster` starts it (`scripts/services start nginx`, through ``Nginx/start(in:template:port:values:)``).
    /// - Throws: ``Requirement/Missing`` without nginx; what nginx logged when it does not start.
    public init(origin: String, originPath: String, workDirectory: String) throws {
        _ = try Requirement.nginx.path()
        directory = workDirectory
        for sub in ["", "/cache", "/tmp", "/logs"] {
            try FileManager.default.createDirectory(atPath: workDirectory + sub, withIntermediateDirectories: true)
        }
        // As root, nginx's workers run as nobody: they must reach and write the cache.
        if getuid() == 0, let nobody = getpwnam("nobody") {
            var folder = workDirectory
            while folder != "/" && !folder.isEmpty {  // reachable from /
                var st = stat()
                if stat(folder, &st) == 0 { chmod(folder, st.st_mode & 0o7777 | 0o111) }
                folder = (folder as NSString).deletingLastPathComponent
            }
            for sub in ["/cache", "/tmp"] { chown(workDirectory + sub, nobody.pointee.pw_uid, nobody.pointee.pw_gid) }
        }
        port = try FreePort.starting("the nginx edge") { port in
            try Nginx.start(
                in: workDirectory, template: Self.configurationTemplate, port: port,
                values: ["ORIGIN_PATH": originPath, "ORIGIN": origin, "CACHE_DIR": workDirectory])
            return port
        }
    }

    /// Whether the edge accepts connections (it does from its start on, unless nginx has ended since).
    public func waitUntilListening(_ path: String = PublishedTreeLayout.currentKeyList.path) -> Bool {
        Wait.holds(within: .seconds(10), poll: .milliseconds(20)) { Nginx.accepts(port) }
    }

    /// What nginx logged (why it would not start).
    public var errorLogText: String { (try? String(contentsOfFile: errorLog, encoding: .utf8)) ?? "" }

    public func stop() { Nginx.stop(in: directory) }
}
