import BacklotBasics
import BacklotClient
import BacklotHTTPClient
import BacklotRepository
import BacklotServer
import BacklotTestSupport
import Foundation
import Testing

/// The second CDN-style edge: Varnish with `contrib/varnish/edge.vcl` in front of `backlot serve`.
/// Devices install and update through it, a second device's install is served from its cache, and
/// a request that is not the tree's is never cached.
@Suite(.serialized) struct VarnishEdgeTests {
    func manager(_ f: ClientFixture, _ edge: VarnishEdge, container: String) throws -> AssetPackManager {
        try AssetPackManager(
            configuration: .init(
                containerPath: f.dir.at(container),
                catalogURL: URL(string: edge.baseURL + "v1/apps/\(f.app)/internal/catalog.json")!, app: f.app,
                channel: .internal, trustedKeys: [f.pinned], platform: .linux))
    }

    @Test func aSecondInstallIsServedFromVarnishAndUpdatesComeThroughIt() async throws {
        let f = try ClientFixture(catalogMaxAge: 1)
        let edge = try VarnishEdge(originPort: f.server.port, originPath: "", workDirectory: f.dir.at("varnish"))
        defer { edge.stop() }
        let (source, _) = try f.publish()

        let first = try manager(f, edge, container: "a")
        _ = try await first.fetch(packWithID: "Levels")
        #expect(try sameFiles(source, first.url(for: "readme.txt").deletingLastPathComponent().path))
        let afterFirst = f.originLoad()
        #expect(afterFirst.requests > 0)

        // A second device: every archive byte comes from Varnish (its catalog, whose max-age is
        // 1 s here, may be revalidated in the background meanwhile: a small body at most).
        let second = try manager(f, edge, container: "b")
        _ = try await second.fetch(packWithID: "Levels")
        #expect(try sameFiles(source, second.url(for: "readme.txt").deletingLastPathComponent().path))
        let afterSecond = f.originLoad()
        let archive = UInt64(try FileDescriptor.openForReading(try f.archivePath()).size())
        #expect(
            afterSecond.bytes - afterFirst.bytes < archive / 10,
            "the origin sent \(afterSecond.bytes - afterFirst.bytes) bytes for the second install of a \(archive)-byte archive"
        )

        // An update: once Varnish's copy of the catalog is older than its max-age, one background
        // fetch revalidates it and the devices update through Varnish, fetching what changed.
        let (edited, _) = try f.publish(edit: true)
        var update = try await first.fetch(packWithID: "Levels")
        for _ in 0..<50 where update.version != 2 {
            try await Task.sleep(nanoseconds: 100_000_000)
            update = try await first.fetch(packWithID: "Levels")
        }
        #expect(update.version == 2)
        #expect(
            update.downloadedBytes > 0 && update.downloadedBytes < archive / 4,
            "\(update.downloadedBytes) of \(archive)")
        #expect(try sameFiles(edited, first.url(for: "readme.txt").deletingLastPathComponent().path))
        let beforeSecondUpdate = f.originLoad()
        let secondUpdate = try await second.fetch(packWithID: "Levels")
        #expect(secondUpdate.version == 2)
        #expect(try sameFiles(edited, second.url(for: "readme.txt").deletingLastPathComponent().path))
        #expect(
            f.originLoad().bytes - beforeSecondUpdate.bytes < secondUpdate.downloadedBytes,
            "the origin sent \(f.originLoad().bytes - beforeSecondUpdate.bytes) bytes for an update of \(secondUpdate.downloadedBytes)"
        )
    }

    @Test func onlyTheTreeIsCachedAndCredentialsStayBehind() throws {
        let f = try ClientFixture()
        let edge = try VarnishEdge(originPort: f.server.port, originPath: "", workDirectory: f.dir.at("varnish"))
        defer { edge.stop() }
        try f.publish()
        let http = HTTPClient()
        // The API passes through: an unauthenticated call is the origin's 401, every time.
        for _ in 0..<2 { #expect(try http.send("GET", edge.baseURL + "api/whoami").status == 401) }
        // Outside the tree and dot files: 404 at the edge.
        #expect(try http.send("GET", edge.baseURL + "admin-token").status == 404)
        #expect(try http.send("GET", edge.baseURL + "v1/.hidden").status == 404)
        // A catalog: the second answer is a hit.
        let catalog = edge.baseURL + "v1/apps/\(f.app)/internal/catalog.json"
        _ = try http.send("GET", catalog)
        #expect(try http.send("GET", catalog).headers["x-cache-status"] == "HIT")
    }
}
