import BacklotBasics
import BacklotCrypto
import BacklotFormat
import BacklotHTTPClient
import BacklotJSON
import BacklotTestSupport
import Foundation
import Testing

@testable import BacklotClient
@testable import BacklotProtocol
@testable import BacklotRepository

/// A server that lies (signed catalogs and archives crafted to break the client's rules), drips,
/// or lags behind: the client fails closed, names the problem, never traps, never writes outside
/// its container, and keeps what is installed.
@Suite(.serialized) struct HostileServerTests {
    func expectRefused(
        _ code: BacklotError.Code? = nil, _ phrase: String, sourceLocation: SourceLocation = #_sourceLocation,
        _ body: () async throws -> Void
    ) async {
        do {
            try await body()
            Issue.record("accepted; expected '\(phrase)'", sourceLocation: sourceLocation)
        } catch let e as BacklotError {
            if let code { #expect(e.code == code, "\(e)", sourceLocation: sourceLocation) }
            #expect(e.description.contains(phrase), "\(e)", sourceLocation: sourceLocation)
        } catch {
            Issue.record("unexpected \(error)", sourceLocation: sourceLocation)
        }
    }

    @Test func aFileWhoseHashIsWrongIsNeverInstalledAndTheInstalledReleaseStays() async throws {
        let f = try ClientFixture()
        try f.publishCrafted(CraftedPack(files: [.init(path: "a.txt", bytes: Array("good".utf8))]), version: 1)
        let manager = try f.manager()
        _ = try await manager.fetch(packWithID: "Crafted")
        for files: [CraftedPack.File] in [
            [
                .init(path: "a.txt", bytes: Array("good".utf8)),
                .init(path: "c.txt", bytes: Array("evil".utf8), digest: SHA256.hash(Array("good".utf8))),
            ],
            [
                .init(
                    path: "a.txt", bytes: (0..<(200 << 10)).map { UInt8(truncatingIfNeeded: $0 &* 7) },
                    digest: SHA256.hash([1]))
            ],
            [
                .init(path: "a.txt", bytes: Array("good".utf8)),
                .init(path: "b.txt", bytes: [], digest: SHA256.hash([1])),
            ],
        ] {
            try f.publishCrafted(CraftedPack(files: files, chunkSize: 64 << 10), version: 2)
            await expectRefused(.corruptArchive, "SHA-256") { _ = try await manager.fetch(packWithID: "Crafted") }
            #expect(try manager.contents(at: "a.txt") == Data("good".utf8))
            #expect(try manager.container.installed("Crafted")?.version == 1)
        }
    }

    @Test func pathsThatClimbOutAreRefusedAndNothingLandsBesideTheRelease() async throws {
        let f = try ClientFixture()
        let manager = try f.manager()
        for mark in ["\u{301}", "\u{200D}", "\u{FE0F}"] {
            try f.publishCrafted(
                CraftedPack(
                    files: [
                        .init(path: "../\(mark)evil", bytes: Array("pwned".utf8)),
                        .init(path: "../../\(mark)evil2", bytes: Array("pwned".utf8)),
                    ], sorted: true))
            await expectRefused(nil, "unsafe path") { _ = try await manager.fetch(packWithID: "Crafted") }
        }
        let everything = FileManager.default.enumerator(atPath: f.dir.path)?.allObjects as? [String] ?? []
        #expect(everything.allSatisfy { !$0.contains("evil") }, "\(everything.filter { $0.contains("evil") })")
    }

    /// Pack paths are bytes: an update that renames a file from NFC to NFD installs the new name
    /// with its bytes (never an empty file), both forms can live side by side, and repair works.
    @Test func namesThatDifferOnlyByNormalisationStayApartAcrossUpdates() async throws {
        let f = try ClientFixture()
        let nfc = "caf\u{E9}"
        let nfd = "cafe\u{301}"
        let manager = try f.manager()
        try f.publishCrafted(CraftedPack(files: [.init(path: "\(nfc)/x", bytes: Array("one".utf8))]), version: 1)
        _ = try await manager.fetch(packWithID: "Crafted")
        try f.publishCrafted(CraftedPack(files: [.init(path: "\(nfd)/x", bytes: Array("one".utf8))]), version: 2)
        _ = try await manager.fetch(packWithID: "Crafted")
        #expect(try manager.contents(at: "\(nfd)/x") == Data("one".utf8))
        #expect(throws: (any Error).self) { _ = try manager.contents(at: "\(nfc)/x") }
        try f.publishCrafted(
            CraftedPack(files: [
                .init(path: "\(nfc)/x", bytes: Array("composed".utf8)),
                .init(path: "\(nfd)/x", bytes: Array("decomposed".utf8)),
            ]), version: 3)
        _ = try await manager.fetch(packWithID: "Crafted")
        #expect(try manager.contents(at: "\(nfc)/x") == Data("composed".utf8))
        #expect(try manager.contents(at: "\(nfd)/x") == Data("decomposed".utf8))
        #expect(try manager.verifyInstalled().isEmpty)
        let damaged = manager.url(for: "\(nfd)/x").path
        chmod(damaged, 0o644)
        try Data("DECOMPOSED".utf8).write(to: URL(fileURLWithPath: damaged))
        #expect(try manager.verifyInstalled().count == 1)
        #expect(try await manager.repair() == ["Crafted"])
        #expect(try manager.contents(at: "\(nfd)/x") == Data("decomposed".utf8))
        #expect(try manager.contents(at: "\(nfc)/x") == Data("composed".utf8))
    }

    /// A signed catalog whose numbers do not fit is refused with the field named, never a trap.
    @Test func outOfRangeNumbersInASignedCatalogAreRefused() async throws {
        let f = try ClientFixture()
        try f.publishCrafted(CraftedPack(files: [.init(path: "a", bytes: [1, 2, 3])]))
        let good = try Catalog.decode(
            SignedEnvelope.open(
                Array(
                    Data(
                        contentsOf: URL(
                            fileURLWithPath: f.repository.publication.catalogPath(app: f.app, channel: .internal)))),
                expecting: Catalog.payloadType, trusting: [f.pinned], source: "c"), source: "c")
        let text = String(decoding: good.payload, as: UTF8.self)
        let huge = [
            "9223372036854775808", "18446744073709551615", "18446744073709551616", "-1", "1e3", "1.5",
            "100000000000000000000000000000",
        ]
        for value in huge {
            for (field, from) in [
                ("packs[0].version", #""version":1}"#),
                ("packs[0].archive.size", #""size":\#(good.packs[0].release.archiveSize)"#),
                ("packs[0].installSize", #""installSize":\#(good.packs[0].release.installSize)"#),
            ] {
                let replacement =
                    from.hasSuffix("}")
                    ? #""version":\#(value)}"#
                    : from.replacingOccurrences(of: from.split(separator: ":").last!, with: value)
                let payload = text.replacingOccurrences(of: from, with: replacement)
                #expect(payload != text, "\(field) not found in \(text)")
                try f.publishCatalog(good, payload: Array(payload.utf8))
                await expectRefused(.untrusted, field) {
                    _ = try await f.manager(container: "c-\(UUID().uuidString)").assetPack(withID: "Crafted")
                }
            }
        }
        // A candidate with 2^63 basis points.
        let withCandidate = text.replacingOccurrences(
            of: #""id":"Crafted""#,
            with:
                #""candidate":\#(String(decoding: Catalog.releaseMembersJSON(good.packs[0].release, basisPoints: "9223372036854775808").utf8, as: UTF8.self)),"id":"Crafted""#
        )
        try f.publishCatalog(good, payload: Array(withCandidate.utf8))
        await expectRefused(.untrusted, "rolloutBasisPoints") {
            _ = try await f.manager(container: "c-bp").assetPack(withID: "Crafted")
        }
    }

    @Test func archiveURLsOutsideTheRepositoryAreRefused() async throws {
        let f = try ClientFixture()
        let pack = try CraftedPack(files: [.init(path: "a", bytes: [1, 2, 3])])
        let sha = SHA256.hash(pack.bytes).hex
        let port = f.server.port
        for url in [
            "../../../../../outside/\(sha).pack", "../../../../../../\(sha).pack",
            "../../../packs/%2e%2e/%2e%2e/\(sha).pack",
            "../../../packs/..%2F..%2F\(sha).pack", "//evil.example/v1/packs/\(sha).pack",
            "https://127.0.0.1:\(port)/v1/packs/\(sha).pack",
            "http://user@127.0.0.1:\(port)/v1/packs/\(sha).pack", "http://127.0.0.1:\(port + 1)/v1/packs/\(sha).pack",
            "../../../packs/\(sha).pack#x", "..\\..\\..\\packs\\\(sha).pack",
        ] {
            try f.publishCrafted(pack, archiveURL: url)
            await expectRefused(.untrusted, "archive URL") {
                _ = try await f.manager(container: "c-\(UUID().uuidString)").fetch(packWithID: "Crafted")
            }
        }
        // The same archive at its proper place installs.
        try f.publishCrafted(pack)
        _ = try await f.manager(container: "ok").fetch(packWithID: "Crafted")
    }

    /// An older catalog than one already trusted (a CDN edge that has not caught up) is reported
    /// as stale, not as an attack; the installed release stays, and nothing is installed from it.
    @Test func aStaleCatalogKeepsTheInstalledRelease() async throws {
        let f = try ClientFixture()
        try f.publishCrafted(
            CraftedPack(files: [.init(path: "a", bytes: Array("v2".utf8))]), version: 2, catalogVersion: 2_000_000_000)
        let manager = try f.manager()
        _ = try await manager.fetch(packWithID: "Crafted")
        try f.publishCrafted(
            CraftedPack(files: [.init(path: "a", bytes: Array("v1".utf8))]), version: 1, catalogVersion: 1_999_999_000)
        await expectRefused(.staleCatalog, "older than one already seen") {
            _ = try await manager.fetch(packWithID: "Crafted")
        }
        #expect(try manager.contents(at: "a") == Data("v2".utf8))
        // When the edge catches up, checks go on as usual.
        try f.publishCrafted(
            CraftedPack(files: [.init(path: "a", bytes: Array("v3".utf8))]), version: 3, catalogVersion: 2_000_000_500)
        _ = try await manager.fetch(packWithID: "Crafted")
        #expect(try manager.contents(at: "a") == Data("v3".utf8))
    }

    /// A client may pin the root.pub of any rotation (the one current when the app was built):
    /// each key of every rotation follows every later rotation, fresh or after earlier fetches.
    @Test func everyPublishedKeyFollowsEveryLaterRotation() async throws {
        let f = try ClientFixture()
        try f.publish()
        var keys = [f.pinned]
        for rotation in 1...3 {
            try f.repository.publication.rotateKey()
            keys.append(f.pinned)
            for (i, key) in keys.enumerated() {
                // A container that fetched before (it follows from its stored list) and a fresh one.
                for container in ["kept-\(i)", "fresh-\(i)-\(rotation)"] {
                    let pack = try await f.manager(container: container, keys: [key]).assetPack(withID: "Levels")
                    #expect(pack.version == 1, "key \(i + 1) after rotation \(rotation) in \(container)")
                }
            }
        }
        // A key nobody published is still refused.
        await expectRefused(.untrusted, "no valid signature") {
            _ = try await f.manager(container: "stranger", keys: [try Ed25519.PrivateKey().publicKey]).assetPack(
                withID: "Levels")
        }
    }

    /// Malformed signature entries are skipped like bad signatures; the envelope stands on the valid one.
    @Test func malformedSignatureEntriesAreSkipped() async throws {
        let f = try ClientFixture()
        try f.publish()
        let path = f.repository.publication.catalogPath(app: f.app, channel: .internal)
        let root = try JSONReader(source: "c").read(Array(try Data(contentsOf: URL(fileURLWithPath: path)))).root
        let valid = try #require(root["signatures"]?.arrayElements?.first)
        let junk: [JSONNode] = [
            .object(["keyid": .number(5), "sig": .string("AAAA")]),
            .object(["keyid": .string("ab"), "sig": .string("!!not base64!!")]),
            .object(["sig": .string("AAAA")]), .object(["keyid": .string(String(repeating: "0", count: 64))]),
            .string("not an object"),
            .object(["keyid": .string(f.pinned.keyID), "sig": .string("AAAA")]),
        ]
        let tampered = JSONNode.object([
            "payloadType": root["payloadType"]!, "payload": root["payload"]!, "signatures": .array(junk + [valid]),
        ])
        try Data(tampered.serialized().utf8).write(to: URL(fileURLWithPath: path))
        #expect(try await f.manager().assetPack(withID: "Levels").version == 1)
        // Junk alone is still no signature.
        try Data(
            JSONNode.object([
                "payloadType": root["payloadType"]!, "payload": root["payload"]!, "signatures": .array(junk),
            ]).serialized().utf8
        )
        .write(to: URL(fileURLWithPath: path))
        await expectRefused(.untrusted, "no valid signature") {
            _ = try await f.manager(container: "c2").assetPack(withID: "Levels")
        }
    }

    /// A catalog dripped at 2 bytes a second is stopped by the transfer's deadline (its bounded
    /// size at the minimum rate, and the stall rule), never waited for forever.
    @Test func aDrippedCatalogIsStoppedByItsDeadline() async throws {
        let drip = try DripServer(bytesPerSecond: 2)
        defer { drip.stop() }
        let dir = try TemporaryDirectory("drip")
        defer { dir.remove() }
        var configuration = AssetPackManager.Configuration(
            containerPath: dir.at("c"),
            catalogURL: URL(string: "http://127.0.0.1:\(drip.port)/v1/apps/com.example.game/internal/catalog.json")!,
            app: "com.example.game", channel: .internal, trustedKeys: [try Ed25519.PrivateKey().publicKey])
        configuration.stallTimeout = 1
        configuration.minimumRate = 64 << 10
        let manager = try AssetPackManager(configuration: configuration)
        await expectRefused(.io, "deadline") { _ = try await manager.allAssetPacks }
    }

    /// What a failed attempt left in its folder (a link planted there, a hard link shared with the
    /// installed release) never misleads the next attempt.
    @Test func anEarlierAttemptsFolderCannotMisleadTheNextOne() async throws {
        let f = try ClientFixture()
        let manager = try f.manager()
        let x1 = (0..<150_000).map { UInt8(truncatingIfNeeded: $0 &* 13) }
        try f.publishCrafted(
            CraftedPack(files: [.init(path: "X", bytes: x1), .init(path: "Y", bytes: [1])]), version: 1)
        _ = try await manager.fetch(packWithID: "Crafted")
        let next = try CraftedPack(files: [.init(path: "X", bytes: x1), .init(path: "Y", bytes: [2])])
        try f.publishCrafted(next, version: 2)
        let partial = manager.container.releaseFolder("Crafted", digest: next.header.indexDigest.hex) + ".partial"
        try FileManager.default.createDirectory(atPath: partial, withIntermediateDirectories: true)
        // A planted link where X goes, and a file outside the container it points at.
        let outside = f.dir.at("outside-secret")
        try Data("secret".utf8).write(to: URL(fileURLWithPath: outside))
        chmod(outside, 0o600)
        try FileManager.default.createSymbolicLink(atPath: partial + "/X", withDestinationPath: outside)
        // Y as a hard link to the installed release's Y (mode 0444): writing it would damage the release.
        let installedY = manager.url(for: "Y").path
        #expect(link(installedY, partial + "/Y") == 0)
        // A link to a read-only folder outside, and a read-only folder holding another link to it:
        // the walk goes through descriptors, and neither the folder nor its mode is touched.
        let outsideFolder = f.dir.at("outside-folder")
        try FileSystem.makeDirectories(outsideFolder)
        try Data("kept".utf8).write(to: URL(fileURLWithPath: outsideFolder + "/file"))
        #expect(chmod(outsideFolder, 0o555) == 0)
        defer { chmod(outsideFolder, 0o755) }
        #expect(symlink(outsideFolder, partial + "/Z") == 0)
        try FileSystem.makeDirectories(partial + "/sealed")
        #expect(symlink(outsideFolder, partial + "/sealed/to-outside") == 0)
        #expect(chmod(partial + "/sealed", 0o500) == 0)
        _ = try await manager.fetch(packWithID: "Crafted")
        #expect((try FileSystem.linkStatus(outsideFolder))?.mode == 0o555, "a mode was set through a planted link")
        #expect(FileManager.default.contents(atPath: outsideFolder + "/file") == Data("kept".utf8))
        #expect(try manager.contents(at: "X") == Data(x1))
        #expect(try manager.contents(at: "Y") == Data([2]))
        #expect(try manager.verifyInstalled().isEmpty)
        #expect((try FileSystem.linkStatus(manager.url(for: "X").path))?.kind == .regular)
        #expect((try FileSystem.linkStatus(outside))?.mode == 0o600, "a mode was set through the planted link")
        #expect(!FileSystem.exists(partial))
    }

    /// The earlier attempt's folder itself is a link the app planted, to a folder outside the
    /// container holding a link, a FIFO and a read-only file: the link is removed, never walked,
    /// and the install goes on in a folder of its own. Walked through the link, the check of an
    /// earlier attempt removed the link and the FIFO there and made the file writable.
    @Test func anEarlierAttemptsFolderThatIsALinkIsNotWalked() async throws {
        let f = try ClientFixture()
        let manager = try f.manager()
        let pack = try CraftedPack(files: [.init(path: "X", bytes: [1, 2, 3]), .init(path: "Y", bytes: [4])])
        try f.publishCrafted(pack, version: 1)
        let outside = f.dir.at("outside")
        try FileSystem.makeDirectories(outside)
        #expect(symlink("/etc/hostname", outside + "/link") == 0)
        #expect(mkfifo(outside + "/fifo", 0o600) == 0)
        try Data("mine".utf8).write(to: URL(fileURLWithPath: outside + "/X"))
        #expect(chmod(outside + "/X", 0o400) == 0)
        let partial = manager.container.releaseFolder("Crafted", digest: pack.header.indexDigest.hex) + ".partial"
        try FileSystem.makeDirectories(manager.container.packFolder("Crafted"))
        #expect(symlink(outside, partial) == 0)
        _ = try await manager.fetch(packWithID: "Crafted")
        #expect(try manager.contents(at: "X") == Data([1, 2, 3]))
        #expect(
            try FileSystem.entryNames(outside).map { String(decoding: $0, as: UTF8.self) }.sorted() == [
                "X", "fifo", "link",
            ])
        #expect((try FileSystem.linkStatus(outside + "/X"))?.mode == 0o400)
        #expect(FileManager.default.contents(atPath: outside + "/X") == Data("mine".utf8))
    }

    @Test func aCatalogWhoseInstallSizeIsNotTheIndexsIsRefused() async throws {
        let f = try ClientFixture()
        let pack = try CraftedPack(files: [.init(path: "a", bytes: [1, 2, 3])])
        try f.publishCrafted(pack)
        let good = try Catalog.decode(
            SignedEnvelope.open(
                Array(
                    Data(
                        contentsOf: URL(
                            fileURLWithPath: f.repository.publication.catalogPath(app: f.app, channel: .internal)))),
                expecting: Catalog.payloadType, trusting: [f.pinned], source: "c"), source: "c")
        var lying = good
        lying.packs[0].release.installSize = 1 << 40
        lying.version += 1
        try f.publishCatalog(lying)
        await expectRefused(.untrusted, "installs 1099511627776 bytes") {
            _ = try await f.manager().fetch(packWithID: "Crafted")
        }
    }

    /// A mirror with no keys that serves endless unsigned key lists costs a bounded number of requests.
    @Test func theSearchForAPinnedKeyIsBounded() throws {
        var asked = 0
        let pinned = try Ed25519.PrivateKey().publicKey
        let found = try KeyList.anchor(
            pinned: [pinned], current: { Array("{}".utf8) },
            fetch: { _ in
                asked += 1
                return Array("{}".utf8)
            })
        #expect(found == nil)
        #expect(asked == 1000)
        // The current list names the pinned key: found in one request.
        let key = try Ed25519.PrivateKey()
        let root = try SignedEnvelope.sign(
            payload: KeyList(version: 7, keys: [key.publicKey]).payload, type: KeyList.payloadType, with: [key]
        ).encoded
        asked = 0
        #expect(
            try KeyList.anchor(
                pinned: [key.publicKey], current: { root },
                fetch: { _ in
                    asked += 1
                    return nil
                })?.version == 7)
        #expect(asked == 0)
    }

    @Test func archiveURLsWithParametersOrDoubleEscapesAreRefused() async throws {
        let f = try ClientFixture()
        let pack = try CraftedPack(files: [.init(path: "a", bytes: [1, 2, 3])])
        let sha = SHA256.hash(pack.bytes).hex
        for url in [
            "../../../packs/..;/\(sha).pack", "../../../packs/%252e%252e/\(sha).pack", "../../../packs/\(sha).pack?x=1",
        ] {
            try f.publishCrafted(pack, archiveURL: url)
            await expectRefused(.untrusted, "archive URL") {
                _ = try await f.manager(container: "c-\(UUID().uuidString)").fetch(packWithID: "Crafted")
            }
        }
    }

    @Test func transferDeadlinesFollowTheBoundedSize() {
        let client = HTTPClient(minimumRate: 1000, baseDeadline: 30)
        #expect(client.deadline(forBytes: 0) == 30)
        #expect(client.deadline(forBytes: 10_000) == 40)
        #expect(client.deadline(forBytes: UInt64.max) == 7 * 86_400)
        #expect(
            HTTPClient().maximumBodySize >= Int(PackHeader.maximumIndexLength),
            "a client reads the largest index in one request")
    }
}

extension Catalog {
    /// A candidate object for crafted catalogs: the release's members plus `rolloutBasisPoints` as written.
    static func releaseMembersJSON(_ release: Release, basisPoints: String) -> String {
        let members =
            releaseMembers(release) + [JSONMember(key: "rolloutBasisPoints", value: JSONNode(.number(basisPoints)))]
        return JSONNode(.object(sorted(members))).serialized()
    }
}
