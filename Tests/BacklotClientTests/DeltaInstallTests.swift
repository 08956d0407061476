import BacklotBasics
import BacklotCrypto
import BacklotFormat
import BacklotProtocol
import BacklotRepository
import BacklotS3
import BacklotTestSupport
import BacklotZstd
import Foundation
import Testing

@testable import BacklotClient

#if canImport(Glibc)
import Glibc
#endif

/// Updates through chunk deltas (docs/format.md §14, docs/protocol.md §3) against a real
/// `backlot serve` (HostingServer over the repository's tree), and every fault of issue 15 §3:
/// the client always ends with the exact files of the new version.
@Suite(.serialized) struct DeltaInstallTests {
    /// A tree of a few files; each version applies small edits (overwrites, insertions, deletions)
    /// drawn from the seed to some of them.
    struct Versions {
        let f: ClientFixture
        var files: [String: [UInt8]] = [:]
        var g: SeededGenerator
        var number = 0

        init(_ f: ClientFixture, seed: UInt64) {
            print("DeltaInstallTests seed \(seed)")
            self.f = f
            g = SeededGenerator(seed: seed)
            for i in 0..<6 { files["f\(i).dat"] = g.text(120_000 + i * 10_000) }
            files["noise.bin"] = g.bytes(200_000)
        }

        /// Edits `count` files a little, packages, uploads and processes the next version, and
        /// releases it on internal when `release`.
        mutating func next(editing count: Int, release: Bool = true) throws -> Int {
            if number > 0 {
                for name in files.keys.sorted().prefix(count) {
                    var bytes = files[name]!
                    let at = Int(g.next() % UInt64(bytes.count - 500))
                    switch g.next() % 3 {
                    case 0: bytes.replaceSubrange(at..<at + 60, with: g.text(60))
                    case 1: bytes.insert(contentsOf: g.text(150), at: at)
                    default: bytes.removeSubrange(at..<at + 120)
                    }
                    files[name] = bytes
                }
            }
            number += 1
            let src = TemporaryDirectory.Named(f.dir.at("versions/\(number)"))
            for (name, bytes) in files { try src.asTemporary.write("src/" + name, bytes) }
            let path = try SamplePack.build(
                in: src.asTemporary, manifestJSON: SamplePack.manifest(id: "Levels"), averageChunkSize: 16 << 10)
            if (try? f.repository.apps.packs(app: f.app).contains("Levels")) != true {
                try f.repository.apps.createPack(app: f.app, id: "Levels")
            }
            let v = try f.repository.uploads.uploadAndProcess(
                app: f.app, pack: "Levels", bytes: Array(try Data(contentsOf: URL(fileURLWithPath: path))))
            #expect(v.state == .complete, "\(v)")
            if release {
                try f.repository.releases.release(app: f.app, pack: "Levels", version: v.number, channel: .internal)
            }
            return v.number
        }
    }

    /// The catalog's current release of Levels.
    static func release(_ f: ClientFixture) throws -> Catalog.Release {
        let bytes = Array(
            try Data(
                contentsOf: URL(fileURLWithPath: f.repository.publication.catalogPath(app: f.app, channel: .internal))))
        let catalog = try Catalog.verify(
            bytes, trusting: [f.pinned], app: f.app, channel: .internal, now: Date(), source: "c")
        return try #require(catalog.packs.first { $0.id.rawValue == "Levels" }).release
    }

    /// Fetches Levels into `container` and checks the installed files are exactly `files`.
    static func fetch(
        _ f: ClientFixture, _ container: String, expecting files: [String: [UInt8]]
    ) async throws -> (report: AssetPackManager.FetchReport, deltaBytes: UInt64, deltaChunks: Int) {
        let manager = try f.manager(container: container)
        let report = try await manager.fetch(packWithID: "Levels")
        let c = try ClientContainer(path: f.dir.at(container))
        let installed = try #require(try c.installed("Levels"))
        let folder = c.releaseFolder("Levels", digest: installed.digest)
        for (name, bytes) in files {
            #expect(try Array(Data(contentsOf: URL(fileURLWithPath: folder + "/" + name))) == bytes, "\(name)")
        }
        #expect(try FileSystem.entryNames(folder).count == files.count)
        let use = try #require(try c.lastDeltaUse("Levels"))
        #expect(use.digest == installed.digest)
        return (report, use.bytes, use.chunks)
    }

    /// Bytes the same update costs without deltas (header, index, missing chunks).
    static func withoutDeltas(_ f: ClientFixture, from a: Int, to b: Int) throws -> UInt64 {
        let path = { (n: Int) throws -> String in
            let sha = try f.repository.uploads.version(app: f.app, pack: "Levels", number: n).archiveSHA256!
            return f.repository.directory.publicTreePath + "/v1/packs/\(sha).pack"
        }
        return PackDiff(old: try PackReader(path: try path(a)).index, new: try PackReader(path: try path(b)))
            .downloadBytes
    }

    @Test func anUpdateThroughADeltaCostsLessAndGivesTheSameFiles() async throws {
        let f = try ClientFixture()
        var v = Versions(f, seed: 1520)
        let one = try v.next(editing: 0)
        _ = try await Self.fetch(f, "c", expecting: v.files)
        let two = try v.next(editing: 3)
        let release = try Self.release(f)
        #expect(release.deltas.count == 1, "a delta from version 1")
        #expect(release.deltas[0].prefixLength < release.deltas[0].size)
        let r = try await Self.fetch(f, "c", expecting: v.files)
        #expect(r.deltaChunks > 0 && r.deltaBytes > 0, "\(r)")
        #expect(r.report.downloadedChunks == 0, "every changed chunk came from the delta: \(r)")
        // All of it early (version 3): the prefix and the frames, each byte read once.
        #expect(r.deltaBytes == release.deltas[0].size, "\(r)")
        // The delta's download is credited to the version it leads to, as a delta.
        f.server.downloads.flush()
        let rows = try f.repository.downloads.report(app: f.app, days: 1).rows
        #expect(
            rows.contains { $0.kind == "delta" && $0.pack == "Levels" && $0.version == 2 && $0.requests >= 1 },
            "\(rows)")
        let without = try Self.withoutDeltas(f, from: one, to: two)
        #expect(
            r.report.downloadedBytes * 4 < without, "\(r.report.downloadedBytes) with the delta, \(without) without")
        // A first install ignores deltas.
        let first = try await Self.fetch(f, "fresh", expecting: v.files)
        #expect(first.deltaChunks == 0)
    }

    /// Installs version 1 into "c", publishes version 2 (4 files edited), and flips the middle
    /// byte of the frames `damaged` picks from the published delta's decoded prefix; returns the
    /// prefix and the files of version 2.
    static func damagedDelta(
        seed: UInt64, _ f: ClientFixture, damaged: (PackDelta) -> [Range<UInt64>]
    ) async throws -> (prefix: PackDelta, files: [String: [UInt8]]) {
        var v = Versions(f, seed: seed)
        _ = try v.next(editing: 0)
        _ = try await Self.fetch(f, "c", expecting: v.files)
        _ = try v.next(editing: 4)
        let release = try Self.release(f)
        let delta = try #require(release.deltas.first)
        let path = f.repository.directory.publicTreePath + "/v1/deltas/\(delta.sha256.hex).delta"
        var bytes = try Array(Data(contentsOf: URL(fileURLWithPath: path)))
        let prefix = try PackDelta.decodePrefix(
            Array(bytes.prefix(Int(delta.prefixLength))), base: delta.base, target: release.indexSHA256,
            fileSize: delta.size, source: "t")
        for range in damaged(prefix) { bytes[Int(range.lowerBound) + range.count / 2] ^= 0x5A }
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return (prefix, v.files)
    }

    @Test func aChangedDeltaIsCaughtByTheTargetHashAndTheChunksAreFetchedWhole() async throws {
        let f = try ClientFixture()
        // Every frame damaged in its middle, the early ones too (so the index is read from the archive).
        let (prefix, files) = try await Self.damagedDelta(seed: 1521, f) { $0.frameRanges }
        let r = try await Self.fetch(f, "c", expecting: files)
        #expect(r.deltaChunks == 0, "\(r)")
        #expect(r.report.downloadedChunks == prefix.rebuiltChunkCount, "each fell back to its whole chunk: \(r)")
    }

    /// Version 3: the early frames complete the index. One of them changed, the index the delta
    /// rebuilds is not the catalog's, so it is read from the archive; the other frames still
    /// rebuild their chunks, and the changed one's chunks are fetched whole.
    @Test func aChangedEarlyFrameMeansTheIndexIsReadFromTheArchive() async throws {
        let f = try ClientFixture()
        let (prefix, files) = try await Self.damagedDelta(seed: 1528, f) { Array($0.frameRanges.prefix(1)) }
        try #require(prefix.formatVersion == 3 && prefix.earlyCount >= 1, "\(prefix.earlyCount) early entries")
        let r = try await Self.fetch(f, "c", expecting: files)
        #expect(r.report.downloadedChunks == prefix.slots[0].targets.count, "\(r)")
        #expect(r.deltaChunks == prefix.rebuiltChunkCount - prefix.slots[0].targets.count, "\(r)")
    }

    @Test func aDeltaMissingFromTheServerFallsBackToWholeChunks() async throws {
        let f = try ClientFixture()
        var v = Versions(f, seed: 1522)
        _ = try v.next(editing: 0)
        _ = try await Self.fetch(f, "c", expecting: v.files)
        _ = try v.next(editing: 3)
        let delta = try #require(try Self.release(f).deltas.first)
        #expect(unlink(f.repository.directory.publicTreePath + "/v1/deltas/\(delta.sha256.hex).delta") == 0)
        let r = try await Self.fetch(f, "c", expecting: v.files)
        #expect(r.deltaChunks == 0 && r.report.downloadedChunks > 0, "\(r)")
    }

    /// A prefix refused outright (its first byte changed: not a delta) still cost its download:
    /// the device reports the same bytes as one that found no delta, plus the prefix.
    @Test func aRefusedPrefixIsCountedAsDownloaded() async throws {
        let f = try ClientFixture()
        var v = Versions(f, seed: 1529)
        _ = try v.next(editing: 0)
        _ = try await Self.fetch(f, "c", expecting: v.files)
        _ = try await Self.fetch(f, "d", expecting: v.files)
        _ = try v.next(editing: 3)
        let delta = try #require(try Self.release(f).deltas.first)
        let path = f.repository.directory.publicTreePath + "/v1/deltas/\(delta.sha256.hex).delta"
        var bytes = try Array(Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(unlink(path) == 0)
        let missing = try await Self.fetch(f, "c", expecting: v.files)
        bytes[0] ^= 0xFF
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let refused = try await Self.fetch(f, "d", expecting: v.files)
        #expect(missing.deltaChunks == 0 && refused.deltaChunks == 0, "\(missing) \(refused)")
        #expect(
            refused.report.downloadedBytes == missing.report.downloadedBytes + delta.prefixLength,
            "\(refused.report.downloadedBytes) with the refused prefix, \(missing.report.downloadedBytes) without")
    }

    @Test func aBaseTheClientNoLongerHasIntactIsFetchedWhole() async throws {
        let f = try ClientFixture()
        var v = Versions(f, seed: 1523)
        _ = try v.next(editing: 0)
        _ = try await Self.fetch(f, "c", expecting: v.files)
        _ = try v.next(editing: 6)
        // Every installed file of version 1 damaged: no base chunk has its SHA-256 any more.
        let c = try ClientContainer(path: f.dir.at("c"))
        let folder = c.releaseFolder("Levels", digest: try #require(try c.installed("Levels")).digest)
        for name in try FileSystem.entryNames(folder) {
            let path = folder + "/" + String(decoding: name, as: UTF8.self)
            chmod(path, 0o644)
            var bytes = try Array(Data(contentsOf: URL(fileURLWithPath: path)))
            for i in stride(from: 0, to: bytes.count, by: 4096) { bytes[i] ^= 1 }
            try Data(bytes).write(to: URL(fileURLWithPath: path))
        }
        let r = try await Self.fetch(f, "c", expecting: v.files)
        #expect(r.deltaChunks == 0 && r.report.downloadedChunks > 0, "\(r)")
    }

    @Test func aDeltaWhoseOutputExceedsTheDeclaredSizeIsStoppedThere() async throws {
        let f = try ClientFixture()
        var v = Versions(f, seed: 1524)
        let one = try v.next(editing: 0)
        _ = try await Self.fetch(f, "c", expecting: v.files)
        let two = try v.next(editing: 3)
        // A delta crafted by hand: each frame rebuilds its chunks followed by 1 MiB more.
        let crafted = try Self.publishCrafted(f, from: one, to: two, version: 2, padding: 1 << 20)
        let r = try await Self.fetch(f, "c", expecting: v.files)
        #expect(r.deltaChunks == 0 && r.report.downloadedChunks == crafted, "\(r)")
    }

    /// A delta of format version 1 (one chunk per frame, chunks named by ID), as a server of an
    /// earlier release made it, still takes the client to the new version.
    @Test func aVersionOneDeltaStillRebuildsItsChunks() async throws {
        let f = try ClientFixture()
        var v = Versions(f, seed: 1527)
        let one = try v.next(editing: 0)
        _ = try await Self.fetch(f, "c", expecting: v.files)
        let two = try v.next(editing: 3)
        let crafted = try Self.publishCrafted(f, from: one, to: two, version: 1, padding: 0)
        let r = try await Self.fetch(f, "c", expecting: v.files)
        #expect(crafted > 0 && r.deltaChunks == crafted, "\(r)")
    }

    /// Replaces the published delta from version `one` to `two` with one made by hand in format
    /// `version` (1: a frame per chunk; 2: the builder's frames), each frame's output followed by
    /// `padding` zero bytes, and publishes the catalog again; returns how many chunks it rebuilds.
    static func publishCrafted(_ f: ClientFixture, from one: Int, to two: Int, version: Int, padding: Int) throws -> Int
    {
        let reader = { (n: Int) throws -> PackReader in
            let sha = try f.repository.uploads.version(app: f.app, pack: "Levels", number: n).archiveSHA256!
            return try PackReader(path: f.repository.directory.publicTreePath + "/v1/packs/\(sha).pack")
        }
        let base = try reader(one)
        let target = try reader(two)
        let honest = try DeltaBuilder().build(base: base, target: target)
        let d = ZstdDecompressor()
        let compressor = ZstdCompressor()
        let chunk = { (reader: PackReader, id: SHA256Digest) throws -> [UInt8] in
            try reader.readChunk(reader.index.chunks.firstIndex { $0.id == id }!, using: d)
        }
        // One frame per entry of the honest delta (version 2), or per chunk it rebuilds (version 1).
        var parts: [(targets: [PackDelta.Target], bases: [SHA256Digest], slot: PackDelta.Slot?)] = []
        for (e, slot) in zip(honest.entries, honest.delta.slots) {
            if version == 2 {
                parts.append((e.targets, e.bases, slot))
            } else {
                for t in e.targets { parts.append(([t], Array(e.bases.prefix(PackDelta.maximumBases)), nil)) }
            }
        }
        var frames: [[UInt8]] = []
        for part in parts {
            let prefix = try part.bases.flatMap { try chunk(base, $0) }
            let plain = try part.targets.flatMap { try chunk(target, $0.id) }
            frames.append(try compressor.compress(plain + [UInt8](repeating: 0, count: padding), prefix: prefix))
        }
        // The index delta as that version makes it: between the indexes' delta forms (version 2),
        // or the indexes themselves (version 1), every ID in it.
        let (baseIndex, targetIndex) = (try base.indexBytes(), try target.indexBytes())
        let indexDelta =
            version == 2
            ? try compressor.compress(
                try #require(PackIndex.deltaForm(targetIndex)), prefix: try #require(PackIndex.deltaForm(baseIndex)))
            : try compressor.compress(targetIndex, prefix: baseIndex)
        let crafted: PackDelta
        if version == 2 {
            crafted = PackDelta(
                base: honest.delta.base, target: honest.delta.target, indexDelta: indexDelta,
                targetIndexLength: honest.delta.targetIndexLength,
                slots: zip(parts, frames).map {
                    PackDelta.Slot(targets: $0.slot!.targets, bases: $0.slot!.bases, length: UInt32($1.count))
                })
        } else {
            let tableLength = parts.reduce(0) { $0 + 52 + 32 * $1.bases.count }
            var offset = UInt64(PackDelta.headerSize + indexDelta.count + tableLength)
            var entries: [PackDelta.Entry] = []
            for (part, frame) in zip(parts, frames) {
                entries.append(
                    .init(
                        target: part.targets[0].id, offset: offset, length: UInt32(frame.count),
                        targetSize: part.targets[0].size, bases: part.bases))
                offset += UInt64(frame.count)
            }
            crafted = PackDelta(
                base: honest.delta.base, target: honest.delta.target, indexDelta: indexDelta,
                targetIndexLength: honest.delta.targetIndexLength, entries: entries)
        }
        let bytes = crafted.encodedPrefix + frames.flatMap { $0 }
        let sha = SHA256.hash(bytes)
        let tree = f.repository.directory.publicTreePath + "/v1/deltas/"
        try Data(bytes).write(to: URL(fileURLWithPath: tree + "\(sha.hex).delta"))
        let listed = Catalog.Delta(
            base: crafted.base, url: "../../../deltas/\(sha.hex).delta", size: UInt64(bytes.count), sha256: sha,
            prefixLength: crafted.prefixLength)
        try Data(Catalog.encodeDeltaList([listed])).write(to: URL(fileURLWithPath: tree + "\(crafted.target.hex).json"))
        try f.repository.publication.publish(app: f.app, channel: .internal)
        #expect(try Self.release(f).deltas == [listed])
        return crafted.rebuiltChunkCount
    }

    /// The same update from a repository that publishes to a bucket of a real radosgw: the delta
    /// files and their list are objects of the bucket, written before the catalog, read by Range.
    @Test func aBucketTreeServesDeltasToo() async throws {
        let store = try ObjectStore.shared()
        let (s3, bucket) = try store.newBucket("delta")
        let dir = try TemporaryDirectory("bucket-delta")
        defer { dir.remove() }
        let app = "com.example.game"
        let tree = try S3PublishedTree(client: s3, bucket: bucket, prefix: "cdn")
        let repo = try Repository(directory: RepositoryDirectory(path: dir.at("data")), tree: tree)
        try BucketEdgeInstallTests.allowAnonymousReads(store, bucket: bucket, prefix: "cdn", in: dir)
        try repo.apps.create(app)
        try repo.apps.createPack(app: app, id: "Levels")
        let src = TemporaryDirectory.Named(dir.at("src"))
        try SamplePack.writeTree(in: src.asTemporary, seed: 1526)
        print("DeltaInstallTests seed 1526")
        let publish = { () throws -> Int in
            let path = try SamplePack.build(
                in: src.asTemporary, manifestJSON: SamplePack.manifest(id: "Levels"), averageChunkSize: 16 << 10)
            let v = try repo.uploads.uploadAndProcess(
                app: app, pack: "Levels", bytes: Array(try Data(contentsOf: URL(fileURLWithPath: path))))
            try repo.releases.release(app: app, pack: "Levels", version: v.number, channel: .internal)
            return v.number
        }
        _ = try publish()
        let manager = try AssetPackManager(
            configuration: .init(
                containerPath: dir.at("container"),
                catalogURL: URL(string: store.endpoint + "/\(bucket)/cdn/v1/apps/\(app)/internal/catalog.json")!,
                app: app, channel: .internal, trustedKeys: [try PublicKeyFile.read(path: repo.directory.publicKeyPath)],
                platform: .linux))
        _ = try await manager.fetch(packWithID: "Levels")
        var level = try src.asTemporary.read("src/Levels/level1.dat")
        level.replaceSubrange(200_000..<200_040, with: [UInt8](repeating: 0x41, count: 40))
        level.insert(contentsOf: Array("an insertion of a few bytes".utf8), at: 30_000)
        try src.asTemporary.write("src/Levels/level1.dat", level)
        _ = try publish()
        #expect(try tree.fileNames(in: "v1/deltas").count == 2, "the delta and its list are in the bucket")
        let report = try await manager.fetch(packWithID: "Levels")
        #expect(report.version == 2 && report.downloadedChunks == 0, "\(report)")
        let c = try ClientContainer(path: dir.at("container"))
        let use = try #require(try c.lastDeltaUse("Levels"))
        #expect(use.chunks > 0 && use.bytes > 0, "\(use)")
        #expect(try sameFiles(src.path + "/src", manager.url(for: "readme.txt").deletingLastPathComponent().path))
    }

    @Test func aSkippedVersionGetsWholeChunks() async throws {
        let f = try ClientFixture()
        f.repository.publication.setDeltaBases(1)
        var v = Versions(f, seed: 1525)
        _ = try v.next(editing: 0)
        _ = try await Self.fetch(f, "c", expecting: v.files)
        _ = try v.next(editing: 3, release: false)
        _ = try v.next(editing: 3)
        let release = try Self.release(f)
        #expect(release.deltas.count == 1, "only 2 → 3")
        let r = try await Self.fetch(f, "c", expecting: v.files)
        #expect(r.deltaChunks == 0 && r.report.downloadedChunks > 0, "\(r)")
        #expect(r.deltaBytes == 0, "no delta is read for a version the client does not hold")
    }

    /// With the default of three bases, a version gets a delta from each of the three before it
    /// (built at once, one per thread), and a client on any of them updates through its own.
    @Test func eachOfThreeBasesGetsItsDeltaAndAClientOnTheOldestUsesIt() async throws {
        let f = try ClientFixture()
        #expect(f.repository.publication.deltaBases == 3)
        var v = Versions(f, seed: 1528)
        _ = try v.next(editing: 0)
        _ = try await Self.fetch(f, "c", expecting: v.files)
        _ = try v.next(editing: 2, release: false)
        _ = try v.next(editing: 2, release: false)
        _ = try v.next(editing: 2)
        let release = try Self.release(f)
        #expect(release.deltas.count == 3 && Set(release.deltas.map(\.base)).count == 3, "\(release.deltas)")
        let r = try await Self.fetch(f, "c", expecting: v.files)
        #expect(r.deltaChunks > 0 && r.report.downloadedChunks == 0, "\(r)")
    }
}
