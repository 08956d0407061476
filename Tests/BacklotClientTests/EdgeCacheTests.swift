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
    func catalogURL(_ edge: EdgeCache, _ f: ClientFixture) -> URL {
        URL(string: edge.baseURL + "v1/apps/\(f.app)/internal/catalog.json")!
    }

    func manager(_ f: ClientFixture, _ edge: EdgeCache, container: String) throws -> AssetPackManager {
        try AssetPackManager(
            configuration: .init(
                containerPath: f.dir.at(container), catalogURL: catalogURL(edge, f), app: f.app,
                channel: .internal, trustedKeys: [f.pinned], platform: .linux))
    }

    @Test func aSecondInstallIsServedFromTheEdgesCacheAndUpdatesComeThroughIt() async throws {
        // Catalogs kept 1 s (not 60): the update below is seen after a second, not a minute.
        let f = try ClientFixture(catalogMaxAge: 1)
        // What is measured is the edge's slices of archives: contrib/nginx/edge.conf does not cache
        // v1/deltas/ yet (it passes them through), so the update must take whole chunks.
        f.repository.publication.setDeltaBases(0)
        let origin = URL(string: f.server.baseURL)!
        let edge = try EdgeCache(origin: "127.0.0.1:\(origin.port!)", originPath: "", workDirectory: f.dir.at("edge"))
        defer { edge.stop() }
        #expect(edge.waitUntilListening(), "\(edge.errorLogText)")
        let (source, _) = try f.publish()

        let first = try manager(f, edge, container: "a")
        _ = try await first.fetch(packWithID: "Levels")
        #expect(try sameFiles(source, first.url(for: "readme.txt").deletingLastPathComponent().path))
        let afterFirst = f.originLoad()
        #expect(afterFirst.requests > 0)

        // A second device: everything it reads comes from the edge, the origin sends nothing.
        let second = try manager(f, edge, container: "b")
        _ = try await second.fetch(packWithID: "Levels")
        #expect(try sameFiles(source, second.url(for: "readme.txt").deletingLastPathComponent().path))
        let afterSecond = f.originLoad()
        #expect(
            afterSecond.requests == afterFirst.requests,
            "the origin answered \(afterSecond.requests - afterFirst.requests) requests of the second install")
        // No content byte came from the origin: only the bodies of 404s whose 60 s at the edge ran
        // out while a slow machine ran the test (each under 1 KiB), if any.
        let notFoundAgain = afterSecond.notFound - afterFirst.notFound
        #expect(
            afterSecond.bytes - afterFirst.bytes <= notFoundAgain * 1024,
            "the origin sent \(afterSecond.bytes - afterFirst.bytes) bytes for the second install, \(notFoundAgain) of its answers 404s"
        )

        // An update: once the edge's copy of the catalog is older than its max-age, the edge
        // revalidates it and the first device updates through the edge, fetching only what changed.
        let full = UInt64(try FileDescriptor.openForReading(try f.archivePath()).size())
        let (edited, _) = try f.publish(edit: true)
        var update = try await first.fetch(packWithID: "Levels")
        for _ in 0..<40 where update.version != 2 {  // the edge's copy expires within a second
            try await Task.sleep(nanoseconds: 100_000_000)
            update = try await first.fetch(packWithID: "Levels")
        }
        #expect(update.version == 2)
        #expect(update.downloadedBytes > 0 && update.downloadedBytes < full / 4, "\(update.downloadedBytes) of \(full)")
        #expect(try sameFiles(edited, first.url(for: "readme.txt").deletingLastPathComponent().path))
        // The second device's update: the changed chunks come from the edge's slices.
        let beforeSecondUpdate = f.originLoad()
        let secondUpdate = try await second.fetch(packWithID: "Levels")
        #expect(secondUpdate.version == 2)
        #expect(try sameFiles(edited, second.url(for: "readme.txt").deletingLastPathComponent().path))
        let afterSecondUpdate = f.originLoad()
        #expect(
            afterSecondUpdate.bytes - beforeSecondUpdate.bytes < secondUpdate.downloadedBytes,
            "the origin sent \(afterSecondUpdate.bytes - beforeSecondUpdate.bytes) bytes for an update of \(secondUpdate.downloadedBytes)"
        )
    }
}
