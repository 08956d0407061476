import BacklotBasics
import BacklotCatalog
import BacklotHTTPServer
import BacklotRepository
import Foundation

/// `backlot serve`: the published tree of a repository over HTTP(S), the management API under
/// `/api`, and `GET /metrics`, with a structured access log.
///
/// ```swift
/// let repo = try Repository(directory: RepositoryDirectory(path: "data"))
/// let server = try HostingServer(repository: repo, configuration: .init(port: 0))
/// print(server.baseURL)   // http://127.0.0.1:PORT/
/// server.stop()
/// ```
public final class HostingServer: Sendable {
    public let directory: RepositoryDirectory
    public let metrics: ServerMetrics
    public let baseURL: String
    let http: HTTPServer  // internal: tests read its connection counts

    /// Binds and starts serving.
    /// - Parameters:
    ///   - treeHeaders: the published tree's cache rule (its catalog and key-list max-ages).
    ///   - accessLog: receives one JSON line per request.
    public convenience init(
        repository: Repository, configuration: HTTPServer.Configuration,
        treeHeaders: PublishedTreeHeaders = PublishedTreeHeaders(),
        accessLog: (@Sendable (String) -> Void)? = nil
    ) throws {
        try self.init(
            repository: repository, listening: ListeningSocket(host: configuration.host, port: configuration.port),
            configuration: configuration, treeHeaders: treeHeaders, accessLog: accessLog)
    }

    /// Starts serving on a socket bound beforehand.
    /// - Parameters:
    ///   - treeHeaders: the published tree's cache rule (its catalog and key-list max-ages).
    ///   - accessLog: receives one JSON line per request.
    public init(
        repository: Repository, listening: ListeningSocket, configuration: HTTPServer.Configuration,
        treeHeaders: PublishedTreeHeaders = PublishedTreeHeaders(), accessLog: (@Sendable (String) -> Void)? = nil
    ) throws {
        let directory = repository.directory
        self.directory = directory
        let metrics = ServerMetrics()
        self.metrics = metrics
        repository.onProcessed { metrics.recordProcessing($0) }
        let api = ManagementAPI(repository: repository, metrics: metrics)
        let tree = try StaticTree(root: directory.publicTreePath, headers: treeHeaders)
        http = try HTTPServer(
            listening: listening, configuration: configuration,
            observer: { request, route, status, bytes, seconds in
                metrics.recordRequest(route: route, status: status, bytes: bytes)
                accessLog?(HostingServer.logLine(request, route: route, status: status, bytes: bytes, seconds: seconds))
            }
        ) { request in
            if request.path == "/metrics" {
                guard request.method == "GET" || request.method == "HEAD" else {
                    return .respond(.error(405, code: "methodNotAllowed", "use GET", route: "metrics"))
                }
                return .respond(
                    HTTPResponse(
                        status: 200,
                        headers: [("Content-Type", "text/plain; version=0.0.4"), ("Cache-Control", "no-store")],
                        body: .bytes(Array(metrics.prometheusText().utf8)), route: "metrics"))
            }
            if let answer = api.route(request) { return answer }
            if let page = Dashboard.respond(to: request) { return .respond(page) }
            return .respond(tree.respond(to: request))
        }
        baseURL = Self.baseURL(host: listening.host, port: http.port, tls: configuration.tls != nil)
        if repository.publicURL == nil { repository.setPublicURL(baseURL) }
    }

    /// `http(s)://HOST:PORT/`, with an IPv6 address in brackets.
    public static func baseURL(host: String, port: UInt16, tls: Bool) -> String {
        "\(tls ? "https" : "http")://\(host.contains(":") ? "[\(host)]" : host):\(port)/"
    }

    /// The bound port.
    public var port: UInt16 { http.port }

    /// Why fewer than 10,000 connections can be held, if so (see ``HTTPServer/limitNote``).
    public var limitNote: String? { http.limitNote }

    /// Stops accepting, lets requests in flight finish (up to `grace` seconds), and stops.
    public func stop(grace: Double = 5) { http.stop(grace: grace) }

    static func logLine(_ r: HTTPRequest, route: String, status: Int, bytes: UInt64, seconds: Double) -> String {
        let time = RFC3339.string(Date())
        return
            "{\"time\":\"\(time)\",\"remote\":\(HTTPResponse.jsonString(r.remoteAddress)),\"method\":\(HTTPResponse.jsonString(r.method)),"
            + "\"path\":\(HTTPResponse.jsonString(r.path)),\"route\":\"\(route)\",\"status\":\(status),\"bytes\":\(bytes),"
            + "\"ms\":\(String(format: "%.2f", seconds * 1000)),\"range\":\(HTTPResponse.jsonString(r.header("Range") ?? ""))}"
    }
}
