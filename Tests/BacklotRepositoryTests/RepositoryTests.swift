import BacklotBasics
import BacklotCrypto
import BacklotFormat
import BacklotProtocol
import BacklotTestSupport
import Foundation
import Testing

@testable import BacklotRepository

/// The repository's pipeline on real files: upload → processing → release → signed catalog,
/// each test on every backend (SQLite and the folder, PostgreSQL and the folder, PostgreSQL and
/// a bucket). The published tree is read through the repository's tree store, wherever it is.
@Suite(.serialized) struct RepositoryTests {
    struct Fixture {
        let dir: TemporaryDirectory
        let repo: Repository
        var key: Ed25519.PublicKey { try! PublicKeyFile.read(path: repo.directory.publicKeyPath) }

        init(_ backend: Backend) throws {
            dir = try TemporaryDirectory("repo")
            repo = try backend.repository(at: dir.at("data"))
            try repo.apps.create("com.example.game")
            try repo.apps.createPack(app: "com.example.game", id: "Levels")
        }

        /// Builds a pack of the sample tree and uploads it as a new version, in `parts` requests.
        /// - Parameters:
        ///   - edit: changes the tree (under `src/`) before it is packaged.
        ///   - damage: changes the pack's bytes (given its path) before they are uploaded.
        func upload(
            app: String = "com.example.game", id: String = "Levels", seed: UInt64 = 42, parts: Int = 1,
            corrupt: Bool = false,
            edit: (TemporaryDirectory) throws -> Void = { _ in },
            damage: (String, inout [UInt8]) throws -> Void = { _, _ in }
        ) throws -> VersionInfo {
            let src = try TemporaryDirectory("src")
            defer { src.remove() }
            try SamplePack.writeTree(in: src, seed: seed)
            try edit(src)
            let path = try SamplePack.build(in: src, manifestJSON: SamplePack.manifest(id: id))
            var bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
            if corrupt { bytes[1000] ^= 0xFF }
            try damage(path, &bytes)
            let v = try repo.uploads.createVersion(app: app, pack: "Levels", size: UInt64(bytes.count))
            let step = (bytes.count + parts - 1) / parts
            var offset = 0
            while offset < bytes.count {
                let upload = try repo.uploads.beginUpload(
                    app: app, pack: "Levels", number: v.number, offset: UInt64(offset))
                let end = min(offset + step, bytes.count)
                try bytes[offset..<end].withUnsafeBytes { try upload.append($0) }
                try upload.close()
                offset = end
            }
            repo.uploads.waitForProcessing()
            return try repo.uploads.version(app: app, pack: "Levels", number: v.number)
        }

        /// A file of the published tree, or nil.
        func published(_ relative: String) throws -> [UInt8]? { try repo.tree.read(relative, atMost: 1 << 30) }

        func catalogBytes(_ channel: Channel) throws -> [UInt8]? {
            try published("v1/apps/com.example.game/\(channel.rawValue)/catalog.json")
        }

        func catalog(_ channel: Channel) throws -> Catalog {
            let bytes = try #require(try catalogBytes(channel))
            return try Catalog.verify(
                bytes, trusting: [key], app: "com.example.game", channel: channel, now: Date(), source: "catalog")
        }
    }

    /// A channel whose release was committed but whose catalog was never written (a crash in
    /// between) is listed as expired, and re-signing publishes it.
    @Test(arguments: Backend.databases) func aReleaseNeverPublishedIsPublishedByTheNextResigning(
        _ backend: Backend
    ) throws {
        let f = try Fixture(backend)
        defer { f.dir.remove() }
        _ = try f.upload()
        try f.repo.releases.release(app: "com.example.game", pack: "Levels", version: 1, channel: .internal)
        let now = Date()
        #expect(
            try f.repo.publication.publishedChannels().map { "\($0.app) \($0.channel) \($0.expires > now)" } == [
                "com.example.game internal true"
            ])
        try f.repo.db.transaction { tx in _ = try tx.run("DELETE FROM catalogs") }
        let listed = try f.repo.publication.publishedChannels()
        #expect(
            listed.map { "\($0.app) \($0.channel) \($0.expires.timeIntervalSince1970)" } == [
                "com.example.game internal 0.0"
            ])
        #expect(try f.repo.publication.resign(now: now) == 1)
        #expect(try f.repo.publication.publishedChannels().allSatisfy { $0.expires > now })
        #expect(try f.catalog(.internal).packs.count == 1)
    }

    @Test(arguments: Backend.allCases) func uploadedInPartsProcessedReleasedAndPublished(_ backend: Backend) throws {
        let f = try Fixture(backend)
        defer { f.dir.remove() }
        let v1 = try f.upload(parts: 3)
        #expect(v1.state == .complete, "\(v1)")
        #expect(v1.number == 1 && v1.archiveSHA256 != nil)
        try f.repo.releases.release(app: "com.example.game", pack: "Levels", version: 1, channel: .internal)
        let catalog = try f.catalog(.internal)
        #expect(catalog.packs.map(\.id.rawValue) == ["Levels"])
        let release = catalog.packs[0].release
        #expect(release.version == 1 && release.archiveSHA256.hex == v1.archiveSHA256)
        // The archive is published at its content address, byte-identical and verifiable.
        let bytes = try #require(try f.published("v1/packs/\(release.archiveSHA256.hex).pack"))
        #expect(SHA256.hash(bytes) == release.archiveSHA256)
        let copy = f.dir.at("published.pack")
        try Data(bytes).write(to: URL(fileURLWithPath: copy))
        let reader = try PackReader(path: copy)
        #expect(reader.packDigest == release.indexSHA256 && reader.header.indexOffset == release.indexOffset)
        try reader.verify()
    }

    @Test(arguments: Backend.allCases) func corruptWrongPackAndOversizedUploadsFailWithAReasonAndPublishNothing(
        _ backend: Backend
    ) throws {
        let f = try Fixture(backend)
        defer { f.dir.remove() }
        let corrupt = try f.upload(corrupt: true)
        #expect(corrupt.state == .failed && corrupt.reason?.isEmpty == false, "\(corrupt)")
        let wrong = try f.upload(id: "Other")
        #expect(wrong.state == .failed && wrong.reason?.contains("not Levels") == true, "\(wrong)")
        #expect(throws: BacklotError.self) {
            try f.repo.releases.release(app: "com.example.game", pack: "Levels", version: 1, channel: .internal)
        }
        #expect(try f.catalogBytes(.internal) == nil)

        let v = try f.repo.uploads.createVersion(app: "com.example.game", pack: "Levels", size: 100)
        let upload = try f.repo.uploads.beginUpload(
            app: "com.example.game", pack: "Levels", number: v.number, offset: 0)
        let bytes = [UInt8](repeating: 1, count: 101)
        #expect { try bytes.withUnsafeBytes { try upload.append($0) } } throws: {
            ($0 as? BacklotError)?.code == .quotaExceeded
        }
        try upload.close()
        #expect(try f.repo.uploads.version(app: "com.example.game", pack: "Levels", number: v.number).received == 0)
    }

    /// Deltas are built while a version is checked, and published only when it passes: a version
    /// damaged where its delta's building never reads (a chunk the base holds too) fails its check
    /// and leaves no delta in the tree and none recorded; the same version undamaged gets its delta.
    @Test(arguments: Backend.allCases) func deltasOfAVersionThatFailsItsCheckAreNeverPublished(
        _ backend: Backend
    ) throws {
        let f = try Fixture(backend)
        defer { f.dir.remove() }
        #expect(try f.upload(seed: 1).state == .complete)
        let v2 = try f.upload(seed: 2)
        #expect(v2.state == .complete)
        let folder = PublishedTreeLayout.deltasFolder
        let before = try f.repo.tree.fileNames(in: folder).sorted()
        #expect(before.contains { $0.hasSuffix(".delta") }, "version 2 has a delta from version 1: \(before)")
        // Version 2's tree with one file edited: every other chunk is one version 2 holds.
        let edit: (TemporaryDirectory) throws -> Void = { src in
            var text = Array(try Data(contentsOf: URL(fileURLWithPath: src.at("src/readme.txt"))))
            text.replaceSubrange(100..<140, with: Array("an edit that makes a delta worth its entry".utf8))
            _ = try src.write("src/readme.txt", text)
        }
        let damaged = try f.upload(seed: 2, edit: edit) { path, bytes in
            // A byte of the middle of a chunk the base holds (the noise file's: stored, not
            // compressed), which only the check reads.
            let reader = try PackReader(path: path)
            let noise = try #require(reader.index.files.first { $0.path == "Textures/noise.bin" })
            let chunk = reader.index.chunks[noise.chunks[noise.chunks.count / 2]]
            bytes[Int(chunk.offset) + Int(chunk.compressedSize) / 2] ^= 0x55
        }
        #expect(damaged.state == .failed, "\(damaged)")
        #expect(try f.repo.tree.fileNames(in: folder).sorted() == before)
        let recorded = try f.repo.db.read { try $0.query("SELECT version FROM published_deltas", []) }
        #expect(!recorded.contains { $0["version"]?.integer(as: Int.self) == damaged.number })
        let good = try f.upload(seed: 2, edit: edit)
        #expect(good.state == .complete)
        let after = try f.repo.db.read { try $0.query("SELECT version FROM published_deltas", []) }
        #expect(after.contains { $0["version"]?.integer(as: Int.self) == good.number })
        #expect(try f.repo.tree.fileNames(in: folder).count > before.count)
    }

    /// The list of deltas into a pack's bytes is one for every app that uploads those bytes: an
    /// app's catalog names only the deltas from its own pack's versions (another app's bases are
    /// nothing its devices hold), and the list is bounded whatever others add to it.
    @Test(arguments: Backend.allCases) func aCatalogNamesOnlyDeltasFromItsOwnPacksVersions(_ backend: Backend) throws {
        let f = try Fixture(backend)
        defer { f.dir.remove() }
        let one = try f.upload(seed: 1)
        let two = try f.upload(seed: 2)
        #expect(one.state == .complete && two.state == .complete)
        try f.repo.apps.create("com.example.other")
        try f.repo.apps.createPack(app: "com.example.other", id: "Levels")
        #expect(try f.upload(app: "com.example.other", seed: 3).state == .complete)
        #expect(try f.upload(app: "com.example.other", seed: 2).state == .complete)  // the same bytes as two
        try f.repo.releases.release(app: "com.example.game", pack: "Levels", version: one.number, channel: .internal)
        let base = try f.catalog(.internal).packs[0].release.indexSHA256
        try f.repo.releases.release(app: "com.example.game", pack: "Levels", version: two.number, channel: .internal)
        let release = try f.catalog(.internal).packs[0].release
        let shared = try #require(
            try f.published(PublishedTreeLayout.deltaList(packDigest: release.indexSHA256.hex).path))
        #expect(try Catalog.decodeDeltaList(shared, source: "list").count == 2, "both apps' bases are listed")
        #expect(release.deltas.map(\.base) == [base], "\(release.deltas)")
        #expect(Publication.maximumListedDeltas == 64)
    }

    @Test(arguments: Backend.allCases) func resumingAtTheWrongOffsetOrTwiceAtOnceIsAConflict(_ backend: Backend) throws
    {
        let f = try Fixture(backend)
        defer { f.dir.remove() }
        let v = try f.repo.uploads.createVersion(app: "com.example.game", pack: "Levels", size: 1000)
        let first = try f.repo.uploads.beginUpload(app: "com.example.game", pack: "Levels", number: v.number, offset: 0)
        #expect {
            try f.repo.uploads.beginUpload(app: "com.example.game", pack: "Levels", number: v.number, offset: 0)
        } throws: { ($0 as? BacklotError)?.code == .conflict }
        try [UInt8](repeating: 7, count: 300).withUnsafeBytes { try first.append($0) }
        try first.close()
        #expect(try f.repo.uploads.version(app: "com.example.game", pack: "Levels", number: v.number).received == 300)
        #expect {
            try f.repo.uploads.beginUpload(app: "com.example.game", pack: "Levels", number: v.number, offset: 0)
        } throws: { ($0 as? BacklotError)?.code == .conflict }
        let resumed = try f.repo.uploads.beginUpload(
            app: "com.example.game", pack: "Levels", number: v.number, offset: 300)
        try resumed.close()
    }

    @Test(arguments: Backend.allCases) func approvalsRolloutsRollbacksAndWithdrawals(_ backend: Backend) throws {
        let f = try Fixture(backend)
        defer { f.dir.remove() }
        _ = try f.upload(seed: 1)
        _ = try f.upload(seed: 2)
        let request = try f.repo.releases.release(
            app: "com.example.game", pack: "Levels", version: 1, channel: .production)
        #expect(request?.status == "pending")
        #expect(try f.catalogBytes(.production) == nil)
        try f.repo.releases.approve(requestID: request!.id)
        let first = try f.catalog(.production)
        #expect(first.packs[0].release.version == 1 && first.packs[0].candidate == nil)

        let staged = try f.repo.releases.release(
            app: "com.example.game", pack: "Levels", version: 2, channel: .production, rolloutPercent: 25)
        #expect(throws: BacklotError.self) { try f.repo.releases.approve(requestID: request!.id) }
        try f.repo.releases.approve(requestID: staged!.id)
        let rolling = try f.catalog(.production)
        #expect(
            rolling.packs[0].release.version == 1 && rolling.packs[0].candidate?.version == 2
                && rolling.packs[0].rolloutBasisPoints == 2500)
        #expect(rolling.version > first.version)

        try f.repo.releases.setRollout(app: "com.example.game", pack: "Levels", percent: 100)
        #expect(try f.catalog(.production).packs[0].release.version == 2)
        try f.repo.releases.rollback(app: "com.example.game", pack: "Levels", channel: .production, to: 1)
        let rolledBack = try f.catalog(.production)
        #expect(rolledBack.packs[0].release.version == 1 && rolledBack.version > rolling.version)

        let rejected = try f.repo.releases.release(
            app: "com.example.game", pack: "Levels", version: 2, channel: .external)
        try f.repo.releases.reject(requestID: rejected!.id, reason: "broken level")
        #expect(try f.repo.releases.request(rejected!.id).status == "rejected")

        #expect(throws: BacklotError.self) {
            try f.repo.uploads.deleteVersion(app: "com.example.game", pack: "Levels", number: 1)
        }
        try f.repo.releases.withdraw(app: "com.example.game", pack: "Levels", channel: .production)
        #expect(try f.catalog(.production).packs.isEmpty)
        try f.repo.uploads.deleteVersion(app: "com.example.game", pack: "Levels", number: 2)
        #expect(throws: BacklotError.self) {
            try f.repo.uploads.version(app: "com.example.game", pack: "Levels", number: 2)
        }
    }

    @Test(arguments: Backend.allCases) func quotaCountsEachPacksLargestVersionAndSaysByHowMuch(
        _ backend: Backend
    ) throws {
        let dir = try TemporaryDirectory("quota")
        defer { dir.remove() }
        let repo = try backend.repository(at: dir.at("data"), label: "quota", quotaBytes: 10_000, maximumPacksPerApp: 2)
        try repo.apps.create("a")
        try repo.apps.createPack(app: "a", id: "p1")
        try repo.apps.createPack(app: "a", id: "p2")
        #expect { try repo.apps.createPack(app: "a", id: "p3") } throws: {
            ($0 as? BacklotError)?.code == .quotaExceeded
        }
        // A version awaiting its upload counts what it stored: 5,999 of its 6,000 bytes here.
        let v1 = try repo.uploads.createVersion(app: "a", pack: "p1", size: 6000)
        let upload = try repo.uploads.beginUpload(app: "a", pack: "p1", number: v1.number, offset: 0)
        try [UInt8](repeating: 7, count: 5999).withUnsafeBytes { try upload.append($0) }
        #expect(try upload.close() == false)
        _ = try repo.uploads.createVersion(app: "a", pack: "p1", size: 5000)  // p1 still counts 5,999
        #expect { try repo.uploads.createVersion(app: "a", pack: "p2", size: 4500) } throws: {
            guard let e = $0 as? BacklotError else { return false }
            return e.code == .quotaExceeded && e.message.contains("499 over")
        }
        _ = try repo.uploads.createVersion(app: "a", pack: "p2", size: 4000)
        #expect { try repo.uploads.createVersion(app: "a", pack: "p2", size: 10_001) } throws: {
            ($0 as? BacklotError)?.code == .invalidInput  // larger than the whole quota: impossible
        }
    }

    /// A declared size reserves nothing (a token that declares the whole quota and sends nothing
    /// holds none of it); the quota is checked again when the last byte arrives, and a version
    /// refused then keeps its bytes and is finished once there is room.
    @Test(arguments: Backend.allCases) func aDeclarationReservesNothingAndTheLastByteIsChecked(
        _ backend: Backend
    ) throws {
        let dir = try TemporaryDirectory("quota-reserve")
        defer { dir.remove() }
        let src = try TemporaryDirectory("src")
        defer { src.remove() }
        try SamplePack.writeTree(in: src, seed: 42)
        let pack = Array(
            try Data(
                contentsOf: URL(
                    fileURLWithPath: try SamplePack.build(in: src, manifestJSON: SamplePack.manifest(id: "Levels")))))
        let quota = UInt64(pack.count) + 1000
        let repo = try backend.repository(at: dir.at("data"), label: "quota-reserve", quotaBytes: quota)
        try repo.apps.create("a")
        try repo.apps.createPack(app: "a", id: "Levels")
        try repo.apps.createPack(app: "a", id: "Other")
        let levels = try repo.uploads.createVersion(app: "a", pack: "Levels", size: UInt64(pack.count))
        // The pack's declaration holds nothing: 1,500 more bytes may be declared beside it.
        let other = try repo.uploads.createVersion(app: "a", pack: "Other", size: 1500)
        let partial = try repo.uploads.beginUpload(app: "a", pack: "Other", number: other.number, offset: 0)
        try [UInt8](repeating: 1, count: 1499).withUnsafeBytes { try partial.append($0) }
        #expect(try partial.close() == false)

        let upload = try repo.uploads.beginUpload(app: "a", pack: "Levels", number: levels.number, offset: 0)
        try pack.withUnsafeBytes { try upload.append($0) }
        #expect { try upload.close() } throws: {
            guard let e = $0 as? BacklotError else { return false }
            return e.code == .quotaExceeded && e.message.contains("499 over") && (e.hint ?? "").contains("kept")
        }
        var now = try repo.uploads.version(app: "a", pack: "Levels", number: levels.number)
        #expect(now.state == .awaitingUpload)
        #expect(now.received == UInt64(pack.count))

        try repo.uploads.deleteVersion(app: "a", pack: "Other", number: other.number)
        let finishing = try repo.uploads.beginUpload(
            app: "a", pack: "Levels", number: levels.number, offset: UInt64(pack.count))
        #expect(try finishing.close() == true)
        repo.uploads.waitForProcessing()
        now = try repo.uploads.version(app: "a", pack: "Levels", number: levels.number)
        #expect(now.state == .complete)
    }

    @Test(arguments: Backend.allCases) func tokensAreStoredHashedAndTheAdminTokenIsWrittenOnce(
        _ backend: Backend
    ) throws {
        let dir = try TemporaryDirectory("tokens")
        defer { dir.remove() }
        let database = try backend.database("tokens")
        let repo = try Repository(directory: RepositoryDirectory(path: dir.at("data")), database: database)
        let admin: String
        switch backend {
        case .sqlite:
            admin = try String(contentsOfFile: repo.adminTokenPath, encoding: .utf8).trimmingCharacters(
                in: .whitespacesAndNewlines)
        case .postgresql, .bucket:
            // No token file with a shared database: the first admin token is made once, on request.
            #expect(!FileSystem.exists(repo.adminTokenPath))
            #expect(try !repo.tokens.hasAdmin())
            admin = try repo.tokens.createInitialAdmin()
            #expect { try repo.tokens.createInitialAdmin() } throws: { ($0 as? BacklotError)?.code == .conflict }
        }
        #expect(try repo.tokens.role(ofToken: admin) == .admin)
        let uploader = try repo.tokens.create(role: .uploader)
        #expect(try repo.tokens.role(ofToken: uploader) == .uploader)
        #expect(try repo.tokens.role(ofToken: "blt_nope") == nil)
        switch backend {
        case .sqlite:
            let dump = try String(
                decoding: Data(contentsOf: URL(fileURLWithPath: dir.at("data/meta.sqlite"))), as: UTF8.self)
            #expect(!dump.contains(admin) && !dump.contains(uploader))
            _ = try Repository(directory: RepositoryDirectory(path: dir.at("data")))
            #expect(try String(contentsOfFile: repo.adminTokenPath, encoding: .utf8).contains(admin))
        case .postgresql, .bucket:
            let stored = try #require(database).read { try $0.query("SELECT * FROM tokens", []) }
            #expect(stored.count == 2)
            #expect(!"\(stored)".contains(admin) && !"\(stored)".contains(uploader))
            // Reopening on the same database keeps the one admin token and makes no file.
            let again = try Repository(directory: RepositoryDirectory(path: dir.at("data")), database: database)
            #expect(try again.tokens.role(ofToken: admin) == .admin && !FileSystem.exists(repo.adminTokenPath))
        }
    }

    @Test(arguments: Backend.allCases) func resigningAndKeyRotationKeepPinnedClientsWorking(_ backend: Backend) throws {
        let f = try Fixture(backend)
        defer { f.dir.remove() }
        _ = try f.upload()
        try f.repo.releases.release(app: "com.example.game", pack: "Levels", version: 1, channel: .internal)
        let pinned = f.key
        let before = try f.catalog(.internal)
        #expect(try f.repo.publication.resign(margin: 0) == 0)
        #expect(try f.repo.publication.resign(margin: .infinity) == 1)
        #expect(try f.catalog(.internal).version > before.version)

        #expect(try f.repo.publication.rotateKey() == 2)
        let bytes = try #require(try f.catalogBytes(.internal))
        #expect(throws: BacklotError.self) {
            try Catalog.verify(
                bytes, trusting: [pinned], app: "com.example.game", channel: .internal, now: Date(), source: "c")
        }
        let trusted = try KeyList.follow(from: KeyList(version: 1, keys: [pinned])) { n in
            try? f.published("v1/keys/root-\(n).json")
        }
        #expect(trusted.version == 2)
        _ = try Catalog.verify(
            bytes, trusting: trusted.keys, app: "com.example.game", channel: .internal, now: Date(), source: "c")
    }
}
