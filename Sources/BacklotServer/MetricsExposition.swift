import BacklotBasics
import BacklotHTTPServer
import BacklotRepository
import Foundation

/// Answers `GET /metrics`: the bearer token when one is required (compared in constant time),
/// then ``ServerMetrics/prometheusText(_:now:)`` with the gauges read from the repository (the
/// earliest catalog expiry, the last re-signing, devices' reports per release, production's live
/// versions and candidates). When the database cannot be reached, those are left out and the
/// counters are still served.
struct MetricsExposition: Sendable {
    let metrics: ServerMetrics
    let repository: Repository
    let token: String?
    let inFlight: @Sendable () -> Int
    let shedder: LoadShedder

    func respond(to request: HTTPRequest) -> HTTPResponse {
        guard request.method == "GET" || request.method == "HEAD" else {
            var r = HTTPResponse.error(405, code: .methodNotAllowed, "use GET", route: "metrics")
            r.headers.append(("Allow", "GET, HEAD"))
            return r
        }
        if let token {
            let given = request.header("Authorization").flatMap { header -> String? in
                header.hasPrefix("Bearer ") ? String(header.dropFirst(7)).trimmingCharacters(in: .whitespaces) : nil
            }
            guard let given, Self.equalInConstantTime(given, token) else {
                var r = HTTPResponse.error(
                    401, code: .unauthorized, "/metrics needs its token", context: "Authorization",
                    hint: "send Authorization: Bearer TOKEN (the token of --metrics-token-file)", route: "metrics")
                r.headers.append(("WWW-Authenticate", "Bearer"))
                return r
            }
        }
        var gauges = ServerMetrics.Gauges(inFlight: inFlight())
        gauges.heavyInFlight = shedder.inFlight
        gauges.heavyLimit = shedder.settings.heavyRequests
        gauges.shed = shedder.shedCount
        if let channels = try? repository.publication.publishedChannels() {
            gauges.earliestCatalogExpiry = channels.map(\.expires).min()
        }
        gauges.lastResign = (try? repository.audit.lastResign()) ?? nil
        gauges.releases = (try? repository.deviceReports.metrics()) ?? []
        gauges.productionPacks = (try? repository.releases.productionPacks()) ?? []
        return HTTPResponse(
            status: 200, headers: [("Content-Type", "text/plain; version=0.0.4"), ("Cache-Control", "no-store")],
            body: .bytes(Array(metrics.prometheusText(gauges).utf8)), route: "metrics")
    }

    /// Whether two strings are equal, in a time that depends only on their lengths.
    static func equalInConstantTime(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8)
        let y = Array(b.utf8)
        guard x.count == y.count else { return false }
        var difference: UInt8 = 0
        for i in x.indices { difference |= x[i] ^ y[i] }
        return difference == 0
    }
}
