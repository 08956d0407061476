import BacklotBasics
import BacklotCrypto
import BacklotFormat
import BacklotPostgres
import BacklotProtocol
import BacklotS3
import BacklotStore
import BacklotTestSupport
import Foundation
import Synchronization
import Testing

@testable import BacklotRepository

/// Two repositories on one PostgreSQL database and one bucket of a real radosgw, as two servers
/// share them: uploads stream into multipart uploads and tails that either resumes, processing is
/// leased and taken over, publications take turns and their versions only grow, a release
/// request is decided once, and an upload survives the object store's gateway restarting.
@Suite(.serialized, .requires(.postgres)) struct SharedStorageTests {
    static let app = "com.example.game"

    /// Two "servers": separate data folders, one database, one bucket, one signing key.
    struct Pair {
        let dir: TemporaryDirectory
        let a: Repository
        let b: Repository
        let s3: S3Client
        let bucket: String
        let store: S3ArchiveStore
        var key: Ed25519.PublicKey { try! PublicKeyFile.read(path: a.directory.publicKeyPath) }

        init(_ label: String, lease: Double = Repository.defaultLeaseDuration, objects: ObjectStore? = nil) throws {
            dir = try TemporaryDirectory(label)
            let url = try PostgresCluster.shared().createDatabase(label)
            (s3, bucket) = try (objects ?? ObjectStore.shared()).newBucket(label)
            let tree = try S3PublishedTree(client: s3, bucket: bucket, prefix: "content")
            store = try S3ArchiveStore(beside: tree, partSize: 5 << 20)
            let first = try RepositoryDirectory(path: dir.at("a"))
            a = try Repository(
                directory: first, database: PostgresDatabase(url: url), tree: tree, archives: store,
                leaseDuration: lease)
            b = try Repository(
                directory: RepositoryDirectory(path: dir.at("b"), signingKeyFile: first.signingKeyPath),
                database: PostgresDatabase(url: url), tree: tree, archives: store, leaseDuration: lease)
            _ = try a.tokens.createInitialAdmin()
            try a.apps.create(SharedStorageTests.app)
            try b.apps.createPack(app: SharedStorageTests.app, id: "Levels")
        }

        /// The object keys under `prefix` in the bucket.
        func keys(_ prefix: String) throws -> [String] {
            try s3.listAllObjects(bucket: bucket, prefix: prefix).map(\.key).sorted()
        }

        func catalog(_ channel: Channel) throws -> Catalog {
            let bytes = try #require(
                try a.tree.read("v1/apps/\(SharedStorageTests.app)/\(channel.rawValue)/catalog.json", atMost: 1 << 20))
            return try Catalog.verify(
                bytes, trusting: [key], app: SharedStorageTests.app, channel: channel, now: Date(), source: "catalog")
        }

        /// Sends `bytes[range]` to `repo` as one request.
        func send(_ repo: Repository, _ number: Int, _ bytes: [UInt8], _ range: Range<Int>) throws -> UInt64 {
            let upload = try repo.uploads.beginUpload(
                app: SharedStorageTests.app, pack: "Levels", number: number, offset: UInt64(range.lowerBound))
            try bytes[range].withUnsafeBytes { try upload.append($0) }
            try upload.close()
            return try repo.uploads.version(app: SharedStorageTests.app, pack: "Levels", number: number).received
        }

        func remove() { dir.remove() }
    }

    /// A pack of about `size` bytes that zstd cannot shrink (random content).
    static func pack(_ dir: TemporaryDirectory, seed: UInt64, size: Int) throws -> [UInt8] {
        let src = try TemporaryDirectory("src")
        defer { src.remove() }
        var g = SeededGenerator(seed: seed)
        try src.write("src/big.bin", g.bytes(size))
        try src.write("src/readme.txt", g.text(2000))
        let path = try SamplePack.build(
            in: src, manifestJSON: SamplePack.manifest(id: "Levels"), averageChunkSize: 256 << 10)
        return Array(try Data(contentsOf: URL(fileURLWithPath: path)))
    }

    /// An instance holds at most its upload memory in parts at once: an upload's request that would
    /// need more is refused as `unavailable` (503 with `Retry-After`, which `backlot upload` waits
    /// out and resumes), and goes on once another request has ended; a part is filled and sent
    /// without the buffer ever holding more than one.
    @Test func uploadsBeyondTheMemoryForPartsAreAskedToComeBack() throws {
        let dir = try TemporaryDirectory("upload-memory")
        defer { dir.remove() }
        let (s3, bucket) = try ObjectStore.shared().newBucket("upload-memory")
        let tree = try S3PublishedTree(client: s3, bucket: bucket, prefix: "content")
        let store = try S3ArchiveStore(beside: tree, partSize: 5 << 20, uploadMemory: 5 << 20)
        let first = UploadRecord(versionID: 1, declared: 12 << 20, label: "a/p/1")
        let second = UploadRecord(versionID: 2, declared: 12 << 20, label: "a/p/2")
        var recorded: [UInt64] = []
        var sink: (any UploadSink)? = try store.openUpload(first) { received, _ in recorded.append(received) }
        #expect(store.uploadMemory.inUse == 5 << 20)
        let refused = try #require(throws: BacklotError.self) { try store.openUpload(second) { _, _ in } }
        #expect(refused.code == .unavailable && refused.message.contains("in memory"), "\(refused)")
        // 7 MiB in pieces of 3 MiB: one part of 5 MiB goes up as the buffer fills, 2 MiB stay.
        var g = SeededGenerator(seed: 5)
        let bytes = g.bytes(7 << 20)
        for start in stride(from: 0, to: bytes.count, by: 3 << 20) {
            try bytes[start..<min(bytes.count, start + (3 << 20))].withUnsafeBytes { try sink!.append($0) }
        }
        #expect(recorded.contains(5 << 20))
        #expect(try sink!.finish() == 7 << 20)
        sink = nil
        #expect(store.uploadMemory.inUse == 0)
        let next = try store.openUpload(second) { _, _ in }
        #expect(store.uploadMemory.inUse == 5 << 20)
        _ = try next.finish()
        // A part larger than the whole budget takes all of it, rather than being refused forever.
        let small = try S3ArchiveStore(beside: tree, partSize: 5 << 20, uploadMemory: 1 << 20)
        let alone = try small.openUpload(UploadRecord(versionID: 3, declared: 12 << 20, label: "a/p/3")) { _, _ in }
        #expect(small.uploadMemory.inUse == 1 << 20)
        #expect(throws: BacklotError.self) {
            try small.openUpload(UploadRecord(versionID: 4, declared: 12 << 20, label: "a/p/4")) { _, _ in }
        }
        _ = try alone.finish()
    }

    @Test func anUploadInUnevenRequestsMovesBetweenServersAsPartsAndTails()
        throws
    {
        let p = try Pair("shared-upload")
        defer { p.remove() }
        let bytes = try Self.pack(p.dir, seed: 11, size: 11 << 20)
        let v = try p.a.uploads.createVersion(app: Self.app, pack: "Levels", size: UInt64(bytes.count))
        let id = try #require(
            try p.a.db.read { try $0.query("SELECT id FROM versions WHERE number = ?", [.integer(Int64(v.number))]) }
                .first?["id"]?.int)

        // 3 MiB on A: less than a part, kept as a tail object.
        #expect(try p.send(p.a, v.number, bytes, 0..<(3 << 20)) == 3 << 20)
        #expect(try p.keys("content/uploads/") == ["content/uploads/\(id).tail-0"])
        // 4 MiB more on B: B starts from A's tail; one 5 MiB part goes up, 2 MiB stay as a tail.
        #expect(try p.send(p.b, v.number, bytes, (3 << 20)..<(7 << 20)) == 7 << 20)
        #expect(try p.keys("content/uploads/") == ["content/uploads/\(id).tail-\(5 << 20)"])
        let uploadID = try #require(
            try p.a.db.read { try $0.query("SELECT upload_id FROM versions WHERE id = ?", [.integer(id)]) }.first?[
                "upload_id"]?.string)
        #expect(
            try p.s3.listParts(bucket: p.bucket, key: "content/uploads/\(id)", uploadID: uploadID).map(\.size) == [
                5 << 20
            ])
        // A wrong offset is refused, naming where the upload is.
        #expect {
            try p.b.uploads.beginUpload(app: Self.app, pack: "Levels", number: v.number, offset: 3 << 20)
        } throws: {
            ($0 as? BacklotError)?.message.contains("at byte \(7 << 20)") == true
        }
        // The rest on A: the upload completes, is processed by one of them, and stored as a blob.
        #expect(try p.send(p.a, v.number, bytes, (7 << 20)..<bytes.count) == UInt64(bytes.count))
        p.a.uploads.waitForProcessing()
        p.b.uploads.waitForProcessing()
        let done = try p.b.uploads.version(app: Self.app, pack: "Levels", number: v.number)
        #expect(done.state == .complete, "\(done)")
        #expect(done.archiveSHA256 == SHA256.hash(bytes).hex)
        #expect(try p.keys("content/uploads/").isEmpty, "the upload, its parts and tails are gone")
        #expect(try p.keys("content/blobs/") == ["content/blobs/\(SHA256.hash(bytes).hex).pack"])
        // Nothing of it is on either server's disk: their folders hold no uploads or archives at all.
        for folder in ["a/uploads", "a/blobs", "b/uploads", "b/blobs"] {
            #expect(!FileSystem.exists(p.dir.at(folder)), "\(folder)")
        }
        // Released through B, the pack is published by a copy inside the bucket, byte for byte.
        try p.b.releases.release(app: Self.app, pack: "Levels", version: v.number, channel: .internal)
        let release = try p.catalog(.internal).packs[0].release
        #expect(release.archiveSHA256.hex == done.archiveSHA256)
        let published = try #require(try p.a.tree.read("v1/packs/\(release.archiveSHA256.hex).pack", atMost: 64 << 20))
        #expect(published == bytes)
        let head = try #require(
            try p.s3.headObject(bucket: p.bucket, key: "content/v1/packs/\(release.archiveSHA256.hex).pack"))
        #expect(
            head.cacheControl == "public, max-age=31536000, immutable" && head.contentType == "application/octet-stream"
        )
    }

    @Test func processingAServerAbandonedIsTakenOverOnceItsLeaseRunsOut()
        throws
    {
        let p = try Pair("shared-lease", lease: 1.5)
        defer { p.remove() }
        let bytes = try Self.pack(p.dir, seed: 12, size: 200_000)
        let v = try p.a.uploads.createVersion(app: Self.app, pack: "Levels", size: UInt64(bytes.count))
        // As if a server had received the whole upload, taken its processing and died at once:
        // the archive is complete in the bucket, the version PROCESSING, leased to a server that
        // will never renew the lease.
        let row = try p.a.uploads.versionRow(app: Self.app, pack: "Levels", number: v.number)
        let sink = try p.store.openUpload(p.a.uploads.uploadRecord(row)) { _, _ in }
        try bytes.withUnsafeBytes { try sink.append($0) }
        #expect(try sink.finish() == UInt64(bytes.count))
        try p.a.db.transaction { tx in
            try tx.run(
                "UPDATE versions SET state = 'PROCESSING', lease_owner = 'dead-server', lease_until = ? WHERE number = ?",
                [.integer(Repository.nowMilliseconds() + 10_000), .integer(Int64(v.number))])
        }
        #expect(try p.b.uploads.takeOverAbandonedProcessing() == 0, "the dead server's lease is still running")
        // Once the lease has run out (10 s), B's next round takes the processing over.
        try Wait.until(
            "B takes over the processing abandoned by the dead server", timeout: .seconds(30), poll: .milliseconds(200)
        ) {
            try p.b.uploads.takeOverAbandonedProcessing() > 0
        }
        p.b.uploads.waitForProcessing()
        let done = try p.a.uploads.version(app: Self.app, pack: "Levels", number: v.number)
        #expect(done.state == .complete && done.archiveSHA256 == SHA256.hash(bytes).hex, "\(done)")
    }

    @Test
    func publicationsThroughBothServersTakeTurnsAndTheVersionOnlyGrows() throws {
        let p = try Pair("shared-publish")
        defer { p.remove() }
        for seed in [21, 22] as [UInt64] {
            _ = try p.a.uploads.uploadAndProcess(
                app: Self.app, pack: "Levels", bytes: try Self.pack(p.dir, seed: seed, size: 50_000))
        }
        let seen = Mutex<[UInt64]>([])
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 3) { worker in
            for round in 0..<6 {
                do {
                    if worker == 2 {
                        seen.withLock { $0.append((try? p.catalog(.internal).version) ?? 0) }
                    } else {
                        try (worker == 0 ? p.a : p.b).releases.release(
                            app: Self.app, pack: "Levels", version: 1 + (round + worker) % 2, channel: .internal)
                    }
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
        }
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0 })")
        let observed = seen.withLock { $0 }.filter { $0 > 0 }
        #expect(observed == observed.sorted(), "catalog versions read while both published: \(observed)")
        let final = try p.catalog(.internal)
        let recorded = try #require(
            try p.a.db.read { try $0.query("SELECT version FROM catalogs", []) }.first?["version"]?.integer(
                as: UInt64.self))
        #expect(final.version == recorded && final.version >= observed.max() ?? 0)
        // What the catalog says is what the database says was released last.
        let live = try #require(
            try p.a.db.read { try $0.query("SELECT live FROM channel_packs WHERE channel = 'internal'", []) }.first?[
                "live"]?.int)
        #expect(final.packs.map(\.release.version) == [Int(live)])
    }

    @Test func aReleaseRequestDecidedThroughBothServersAtOnceIsDecidedOnce()
        throws
    {
        let p = try Pair("shared-approve")
        defer { p.remove() }
        _ = try p.a.uploads.uploadAndProcess(
            app: Self.app, pack: "Levels", bytes: try Self.pack(p.dir, seed: 31, size: 50_000))
        let request = try #require(
            try p.a.releases.release(app: Self.app, pack: "Levels", version: 1, channel: .production))
        let outcomes = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 2) { i in
            do {
                try (i == 0 ? p.a : p.b).releases.approve(requestID: request.id)
                outcomes.withLock { $0.append("approved") }
            } catch let e as BacklotError {
                outcomes.withLock { $0.append(e.code == .conflict ? "conflict" : "\(e)") }
            } catch {
                outcomes.withLock { $0.append("\(error)") }
            }
        }
        #expect(outcomes.withLock { $0 }.sorted() == ["approved", "conflict"])
        #expect(try p.catalog(.production).packs.map(\.release.version) == [1])
    }

    @Test func oneServerAtATimeResignsAndAnotherTakesOverWhenItStops() throws {
        let p = try Pair("shared-resign")
        defer { p.remove() }
        _ = try p.a.uploads.uploadAndProcess(
            app: Self.app, pack: "Levels", bytes: try Self.pack(p.dir, seed: 51, size: 50_000))
        try p.a.releases.release(app: Self.app, pack: "Levels", version: 1, channel: .internal)
        // A catalog signed ten days ago: it expires in four, inside the re-signing margin.
        try p.a.publication.publish(app: Self.app, channel: .internal, now: Date().addingTimeInterval(-10 * 86_400))
        let old = try p.catalog(.internal)
        // A holds the re-signing lease and re-signs; B, meanwhile, does not.
        try p.a.shareWork(resigning: true)
        let renewed = try p.catalog(.internal)
        #expect(renewed.version > old.version && renewed.expires.timeIntervalSinceNow > 13 * 86_400)
        try p.a.publication.publish(app: Self.app, channel: .internal, now: Date().addingTimeInterval(-10 * 86_400))
        let again = try p.catalog(.internal)
        try p.b.shareWork(resigning: true)
        #expect(try p.catalog(.internal).version == again.version, "B does not re-sign while A holds the lease")
        // A stops (a graceful stop gives the lease up): B takes it at its next round.
        p.a.leases.release(Repository.resigningLease)
        try p.b.shareWork(resigning: true)
        let byB = try p.catalog(.internal)
        #expect(byB.version > again.version && byB.expires.timeIntervalSinceNow > 13 * 86_400)
        #expect(try !p.a.leases.acquire(Repository.resigningLease, for: 180), "B holds it now")
    }

    @Test func anUploadSurvivesTheGatewayStoppingAndStartingAgain() throws {
        try ObjectStore.withPrivateGateway { objects in
            let p = try Pair("shared-gateway", objects: objects)
            defer { p.remove() }
            let bytes = try Self.pack(p.dir, seed: 41, size: 7 << 20)
            let v = try p.a.uploads.createVersion(app: Self.app, pack: "Levels", size: UInt64(bytes.count))
            #expect(try p.send(p.a, v.number, bytes, 0..<(6 << 20)) == 6 << 20)
            try objects.stopGateway()
            var restarted = false
            defer { if !restarted { try? objects.startGateway() } }
            // While the gateway is down, the upload cannot go on, and says why.
            #expect { _ = try p.send(p.b, v.number, bytes, (6 << 20)..<bytes.count) } throws: { error in
                guard let e = error as? BacklotError else { return false }
                return e.code == .transport || e.code == .unavailable || e.code == .objectStore
            }
            try objects.startGateway()
            restarted = true
            // Back up, it resumes from the bytes the object store holds.
            let at = try p.b.uploads.version(app: Self.app, pack: "Levels", number: v.number).received
            #expect(at == 6 << 20)
            #expect(try p.send(p.b, v.number, bytes, Int(at)..<bytes.count) == UInt64(bytes.count))
            p.b.uploads.waitForProcessing()
            #expect(try p.a.uploads.version(app: Self.app, pack: "Levels", number: v.number).state == .complete)
        }
    }
}
