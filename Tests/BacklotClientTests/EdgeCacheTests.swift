import BacklotBasics
import BacklotClient
import BacklotRepository
import BacklotServer
import BacklotTestSupport
import Foundation
import Testing

/// The project's nginx edge (`contrib/nginx/edge.conf`) in front of `backlot serve`: clients install
/// and update through it, and a second client's install is served from its cache.
@Suite(.serialized) struct EdgeCacheTests {
    /// Requests the origin answered on the published tree, and the body bytes it sent.
    func originLoad(_ f: ClientFixture) -> (requests: UInt64, bytes: UInt64) {
        var requests: UInt64 = 0, bytes: UInt64 = 0
        for line in f.server.metrics.prometheusText().split(separator: "\n") where !line.hasPrefix("#") {
            let parts = line.split(separator: " ")
            guard parts.count == 2, let n = UInt64(parts[1]) else { continue }
            if parts[0].hasPrefix("backlot_http_requests_total{route=\"static\"") { requests += n }
            if parts[0] == "backlot_http_response_bytes_total" { bytes = n }
        }
        return (requests, bytes)
    }

    func catalogURL(_ edge: EdgeCache, _ f: ClientFixture) -> URL {
        URL(string: edge.baseURL + "v1/apps/\(f.app)/internal/catalog.json")!
    }

    func manager(_ f: ClientFixture, _ edge: EdgeCache, container: String) throws -> AssetPackManager {
        try AssetPackManager(configuration: .init(containerPath: f.dir.at(container), catalogURL: catalogURL(edge, f), app: f.app,
                                                  channel: .internal, trustedKeys: [f.pinned], platform: .linux))
    }

    @Test func aSecondInstallIsServedFromTheEdgesCacheAndUpdatesComeThroughIt() async throws {
        let f = try ClientFixture()
        let origin = URL(string: f.server.baseURL)!
        let edge = try EdgeCache(origin: "127.0.0.1:\(origin.port!)", originPath: "", workDirectory: f.dir.at("edge"))
        defer { edge.stop() }
        #expect(edge.waitUntilListening(), "\(edge.errorLogText)")
        let (source, _) = try f.publish()

        let first = try manager(f, edge, container: "a")
        _ = try await first.fetch(packWithID: "Levels")
        #expect(try sameFiles(source, first.url(for: "readme.txt").deletingLastPathComponent().path))
        let afterFirst = originLoad(f)
        #expect(afterFirst.requests > 0)

        // A second device: everything it reads comes from the edge, the origin sends nothing.
        let second = try manager(f, edge, container: "b")
        _ = try await second.fetch(packWithID: "Levels")
        #expect(try sameFiles(source, second.url(for: "readme.txt").deletingLastPathComponent().path))
        let afterSecond = originLoad(f)
        #expect(afterSecond.requests == afterFirst.requests, "the origin answered \(afterSecond.requests - afterFirst.requests) requests of the second install")
        #expect(afterSecond.bytes == afterFirst.bytes)
    }
}
