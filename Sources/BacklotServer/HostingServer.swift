import BacklotBasics
import BacklotHTTPServer
import BacklotProtocol
import BacklotRepository
import Foundation
import Synchronization

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
    /// The second listener of `/metrics` (``MetricsAccess/listening``), if any.
    let metricsHTTP: HTTPServer?
    /// The download counts, flushed to the metadata store every few seconds and at stop.
    public let downloads: DownloadCounter
    /// `http://HOST:PORT/metrics` on the metrics listener, when there is one.
    public let metricsURL: String?

    /// Binds and starts serving.
    /// - Parameters:
    ///   - treeHeaders: the published tree's cache rule (its catalog and key-list max-ages).
    ///   - accessLog: receives one JSON line per request.
    public convenience init(
        repository: Repository, configuration: HTTPServer.Configuration,
        treeHeaders: PublishedTreeHeaders = PublishedTreeHeaders(),
        accessLog: (@Sendable (String) -> Void)? = nil, metricsAccess: MetricsAccess = MetricsAccess(),
        version: String = "unknown", loadShedding: LoadShedding = LoadShedding()
    ) throws {
        try self.init(
            repository: repository, listening: ListeningSocket(host: configuration.host, port: configuration.port),
            configuration: configuration, treeHeaders: treeHeaders, accessLog: accessLog, metricsAccess: metricsAccess,
            version: version, loadShedding: loadShedding)
    }

    /// Starts serving on a socket bound beforehand.
    /// - Parameters:
    ///   - treeHeaders: the published tree's cache rule (its catalog and key-list max-ages).
    ///   - accessLog: receives one JSON line per request.
    ///   - metricsAccess: a token `/metrics` requires, and a second listener for it alone.
    ///   - version: the build's version, in `backlot_build_info`.
    ///   - loadShedding: the bound on heavy requests and the catalogs' `Backlot-Check-After`.
    public init(
        repository: Repository, listening: ListeningSocket, configuration: HTTPServer.Configuration,
        treeHeaders: PublishedTreeHeaders = PublishedTreeHeaders(), accessLog: (@Sendable (String) -> Void)? = nil,
        metricsAccess: MetricsAccess = MetricsAccess(), version: String = "unknown",
        loadShedding: LoadShedding = LoadShedding()
    ) throws {
        let directory = repository.directory
        self.directory = directory
        let metrics = ServerMetrics(version: version)
        self.metrics = metrics
        repository.uploads.onProcessed { metrics.recordProcessing($0) }
        repository.uploads.onProcessingTime { _, seconds in metrics.recordProcessingTime(seconds: seconds) }
        let api = ManagementAPI(repository: repository, metrics: metrics)
        let tree = try StaticTree(root: directory.publicTreePath, headers: treeHeaders)
        let downloads = DownloadCounter(repository: repository)
        self.downloads = downloads
        let inFlight = Mutex<HTTPServer?>(nil)
        let shedder = LoadShedder(loadShedding)
        let exposition = MetricsExposition(
            metrics: metrics, repository: repository, token: metricsAccess.token,
            inFlight: { inFlight.withLock { $0?.requestsInFlight ?? 0 } }, shedder: shedder)
        let metricsHere = metricsAccess.listening == nil
        let main = try HTTPServer(
            listening: listening, configuration: configuration,
            observer: { request, route, status, bytes, seconds in
                shedder.finished(request)
                metrics.recordRequest(route: route, path: request.path, status: status, bytes: bytes, seconds: seconds)
                if route == "static", request.method == "GET" {
                    downloads.record(
                        path: request.path, app: request.header(PublishedTreeLayout.appHeader), status: status,
                        bytes: bytes)
                }
                accessLog?(HostingServer.logLine(request, route: route, status: status, bytes: bytes, seconds: seconds))
            }
        ) { request in
            if metricsHere, request.path == "/metrics" { return .respond(exposition.respond(to: request)) }
            if let busy = shedder.admit(request) { return .respond(busy) }
            // API answers hold secrets (a new token) and per-caller data: never stored by a cache on the way.
            if let answer = api.route(request) { return answer.addingHeaders(ManagementAPI.responseHeaders) }
            if let page = Dashboard.respond(to: request) { return .respond(page) }
            var answer = tree.respond(to: request)
            if answer.status == 200 || answer.status == 304, let hint = shedder.checkAfter(),
                case .catalog? = PublishedTreeLayout(path: request.path.drop(while: { $0 == "/" }))
            {
                answer.headers.append((PublishedTreeLayout.checkAfterHeader, String(hint)))
            }
            return .respond(answer)
        }
        http = main
        inFlight.withLock { $0 = main }
        if let second = metricsAccess.listening {
            var secondConfiguration = HTTPServer.Configuration(host: second.host, port: 0)
            secondConfiguration.threads = 1
            let server = try HTTPServer(
                listening: second, configuration: secondConfiguration,
                observer: { request, route, status, bytes, seconds in
                    metrics.recordRequest(
                        route: route, path: request.path, status: status, bytes: bytes, seconds: seconds)
                }
            ) { request in
                guard request.path == "/metrics" else {
                    return .respond(
                        .error(404, code: .notFound, "this listener serves /metrics only", route: "metrics"))
                }
                return .respond(exposition.respond(to: request))
            }
            metricsHTTP = server
            metricsURL = Self.baseURL(host: second.host, port: server.port, tls: false) + "metrics"
        } else {
            metricsHTTP = nil
            metricsURL = nil
        }
        baseURL = Self.baseURL(host: listening.host, port: http.port, tls: configuration.tls != nil)
        if repository.publication.publicURL == nil { repository.publication.setPublicURL(baseURL) }
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
    public func stop(grace: Double = 5) {
        http.stop(grace: grace)
        metricsHTTP?.stop(grace: grace)
        downloads.stop()
    }

    static func logLine(_ r: HTTPRequest, route: String, status: Int, bytes: UInt64, seconds: Double) -> String {
        let time = RFC3339.string(Date())
        // A device's report keeps no address, not even in the log (docs/privacy.md).
        let segments = r.path.split(separator: "/").map(String.init)
        let remote = r.method == "POST" && API.reportDevice.match(segments) != nil ? "" : r.remoteAddress
        return
            "{\"time\":\"\(time)\",\"remote\":\(HTTPResponse.jsonString(remote)),\"method\":\(HTTPResponse.jsonString(r.method)),"
            + "\"path\":\(HTTPResponse.jsonString(r.path)),\"route\":\"\(route)\",\"status\":\(status),\"bytes\":\(bytes),"
            + "\"ms\":\(String(format: "%.2f", seconds * 1000)),\"range\":\(HTTPResponse.jsonString(r.header("Range") ?? ""))}"
    }
}
