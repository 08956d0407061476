import BacklotBasics
import BacklotClient
import BacklotCrypto
import BacklotFormat
import BacklotHTTPServer
import BacklotRepository
import BacklotServer
import BacklotTestSupport
import Foundation
import Testing

/// Trust fails closed, and a failure leaves the installed release untouched and readable.
@Suite(.serialized) struct TrustTests {
    func untrusted(
        _ body: () async throws -> Void, _ phrase: String, sourceLocation: SourceLocation = #_sourceLocation
    ) async {
        do {
            try await body()
            Issue.record("accepted; expected '\(phrase)'", sourceLocation: sourceLocation)
        } catch let e as BacklotError {
            #expect(e.description.contains(phrase), "\(e)", sourceLocation: sourceLocation)
        } catch {
            Issue.record("unexpected \(error)", sourceLocation: sourceLocation)
        }
    }

    @Test func wrongKeyAppChannelExpiredAndRolledBackCatalogsAreRefused() async throws {
        let f = try ClientFixture()
        try f.publish()
        let stranger = try Ed25519.PrivateKey().publicKey
        await untrusted(
            { _ = try await f.manager(keys: [stranger]).assetPack(withID: "Levels") },
            "no valid signature by a trusted key")
        // The production catalog is not the internal one.
        try f.publish(channel: .production)
        let productionPath = f.repository.publication.catalogPath(app: f.app, channel: .production)
        let internalPath = f.repository.publication.catalogPath(app: f.app, channel: .internal)
        let saved = try Data(contentsOf: URL(fileURLWithPath: internalPath))
        try FileManager.default.removeItem(atPath: internalPath)
        try FileManager.default.copyItem(atPath: productionPath, toPath: internalPath)
        await untrusted({ _ = try await f.manager().assetPack(withID: "Levels") }, "not com.example.game/internal")
        try saved.write(to: URL(fileURLWithPath: internalPath))
        await untrusted(
            { _ = try await f.manager(app: "com.other").assetPack(withID: "Levels") }, "not com.other/internal")

        // Expired: signed long ago.
        try f.repository.publication.publish(
            app: f.app, channel: .internal, now: Date(timeIntervalSinceNow: -30 * 86_400))
        await untrusted({ _ = try await f.manager(container: "c2").assetPack(withID: "Levels") }, "expired")

        // Rollback: a client that saw a newer catalog refuses an older one.
        try f.repository.publication.publish(app: f.app, channel: .internal)
        let older = try Data(contentsOf: URL(fileURLWithPath: internalPath))
        let manager = try f.manager(container: "c3")
        _ = try await manager.assetPack(withID: "Levels")
        try f.repository.publication.publish(app: f.app, channel: .internal, now: Date(timeIntervalSinceNow: 10))
        _ = try await manager.assetPack(withID: "Levels")
        try older.write(to: URL(fileURLWithPath: internalPath))
        await untrusted({ _ = try await manager.assetPack(withID: "Levels") }, "older than one already seen")
    }

    @Test func aRotatedKeyIsFollowedFromThePinnedOne() async throws {
        let f = try ClientFixture()
        try f.publish()
        let pinned = f.pinned
        #expect(try f.repository.publication.rotateKey() == 2)
        let manager = try f.manager(keys: [pinned])
        #expect(try await manager.assetPack(withID: "Levels").version == 1)
    }

    @Test func mixedOrCorruptArchivesAreRefusedAndTheInstalledReleaseStays() async throws {
        let f = try ClientFixture()
        // The archive's chunks are what is checked here: no delta may bring the edited one instead.
        f.repository.publication.setDeltaBases(0)
        let (source, _) = try f.publish()
        let manager = try f.manager()
        _ = try await manager.fetch(packWithID: "Levels")
        try f.publish(edit: true)
        let archive = try f.archivePath()
        var bytes = Array(try Data(contentsOf: URL(fileURLWithPath: archive)))
        let original = bytes
        // A changed chunk (the edited region is what the client must download).
        let index = try PackReader(path: archive).index
        let edited = index.files.first { $0.path == "Levels/level1.dat" }!
        // The chunk that holds the edited bytes (offset 100 000 of the file): the one the client lacks.
        var start: UInt64 = 0
        var hit = edited.chunks[0]
        for c in edited.chunks {
            let size = UInt64(index.chunks[c].uncompressedSize)
            if start <= 100_005 && 100_005 < start + size {
                hit = c
                break
            }
            start += size
        }
        let chunk = index.chunks[hit]
        bytes[Int(chunk.offset) + 5] ^= 0xFF
        try FileManager.default.removeItem(atPath: archive)
        try Data(bytes).write(to: URL(fileURLWithPath: archive))
        // zstd or SHA-256 refuses the chunk
        await untrusted({ _ = try await manager.fetch(packWithID: "Levels") }, "at offset")
        #expect(
            try sameFiles(source, manager.url(for: "readme.txt").deletingLastPathComponent().path), "v1 is untouched")
        #expect(try manager.contents(at: "Levels/level1.dat").count > 0)
        // An index that is not the catalog's (mix-and-match).
        bytes = original
        bytes[bytes.count - 10] ^= 0xFF
        try Data(bytes).write(to: URL(fileURLWithPath: archive))
        await untrusted(
            { _ = try await manager.fetch(packWithID: "Levels") }, "index does not have the SHA-256 the catalog names")
        // Restored, the update completes.
        try Data(original).write(to: URL(fileURLWithPath: archive))
        #expect(try await manager.fetch(packWithID: "Levels").version == 2)
    }

    @Test func aServerThatIgnoresRangeIsRefused() async throws {
        let f = try ClientFixture()
        try f.publish()
        let tree = try StaticTree(root: f.repository.directory.publicTreePath)
        // A server that answers every request with the whole file (200), Range or not.
        let server = try HTTPServer(configuration: .init(port: 0)) { request in
            let stripped = HTTPRequest(method: request.method, path: request.path, headers: [:])
            return .respond(tree.respond(to: stripped))
        }
        defer { server.stop(grace: 0) }
        let manager = try AssetPackManager(
            configuration: .init(
                containerPath: f.dir.at("c"),
                catalogURL: URL(string: "http://127.0.0.1:\(server.port)/v1/apps/\(f.app)/internal/catalog.json")!,
                app: f.app, channel: .internal, trustedKeys: [f.pinned]))
        await untrusted({ _ = try await manager.fetch(packWithID: "Levels") }, "ignored the Range request")
        #expect(!manager.assetPackIsAvailableLocally(withID: "Levels"))
    }
}
