import BacklotBasics
import BacklotCrypto
import BacklotTestSupport
import Foundation
import Testing

@testable import BacklotFormat

/// Many small files (#18): packaging in parallel batches stays deterministic and round-trips, a
/// folder of many entries extracts whole, paths at the format's length limit are taken and one
/// byte more is refused, and an index that declares millions of files is refused before anything
/// is allocated for them. Counts are scaled down from the benchmark's (50,000 files) to keep the
/// suite quick.
@Suite struct SmallFilesTests {
    /// Writes `count` small files (100 a folder, half text, half random) and a few larger ones,
    /// with duplicates across batches and an empty file.
    func writeSmallTree(in dir: TemporaryDirectory, count: Int, seed: UInt64) throws {
        var g = SeededGenerator(seed: seed)
        for i in 0..<count {
            let size = 500 + Int(g.next() % 7500)
            let path = "src/small/\(String(format: "%03d", i / 100))/file-\(String(format: "%05d", i))"
            if i % 2 == 0 {
                try dir.write(path + ".txt", g.text(size))
            } else {
                try dir.write(path + ".dat", g.bytes(size))
            }
        }
        let repeated = g.bytes(3000)
        try dir.write("src/small/000/same-a.bin", repeated)
        try dir.write("src/small/999/same-z.bin", repeated)
        try dir.write("src/small/empty", [])
        // Larger than SmallBatch.fileLimit, between small files: read by the main thread.
        try dir.write("src/small/050/large.bin", g.bytes(SmallBatch.fileLimit + 123_457))
        // Over two of the main thread's batches: the workers compress one while the next is read.
        let block = g.bytes(1 << 20)
        var larger: [UInt8] = []
        larger.reserveCapacity(2 * PackWriter.largeFileBatchBytes + 77_777)
        while larger.count < 2 * PackWriter.largeFileBatchBytes + 77_777 {
            larger += block
            withUnsafeBytes(of: UInt64(larger.count)) { larger += $0 }  // every copy differs
        }
        try dir.write("src/small/051/larger.bin", Array(larger.prefix(2 * PackWriter.largeFileBatchBytes + 77_777)))
        try dir.write("src/small/050/tool", g.bytes(2000), mode: 0o755)
    }

    @Test func aFolderOfManySmallFilesRoundTripsAndPacksTheSameWhateverTheThreads() throws {
        let dir = try TemporaryDirectory("small-many")
        defer { dir.remove() }
        var g = SeededGenerator.fromEnvironment()
        print("aFolderOfManySmallFilesRoundTripsAndPacksTheSameWhateverTheThreads seed: \(g.seed)")
        try writeSmallTree(in: dir, count: 2_500, seed: g.next())
        _ = try SamplePack.build(in: dir, name: "one.pack", jobs: 1, averageChunkSize: 64 << 10)
        let two = try SamplePack.build(in: dir, name: "two.pack", jobs: 2, averageChunkSize: 64 << 10)
        #expect(try dir.read("one.pack") == dir.read("two.pack"), "the pack depends on the thread count")

        let pack = try PackReader(path: two)
        #expect(pack.index.files.count == 2_500 + 6)
        try pack.verify()
        // The two identical files share one chunk; a small file is one chunk whose ID is the file's digest.
        let same = pack.index.files.filter { $0.path.hasSuffix("same-a.bin") || $0.path.hasSuffix("same-z.bin") }
        #expect(same.count == 2 && same[0].chunks == same[1].chunks)
        for file in pack.index.files where file.chunks.count == 1 {
            #expect(pack.index.chunks[file.chunks[0]].id == file.digest)
        }

        let out = dir.at("out")
        try PackExtractor(pack: pack, jobs: 2).extract(to: out)
        let selection = try SourceSelection(
            manifest: try PackManifest.load(Array(SamplePack.manifest().utf8), source: "m").0,
            sourceRoot: dir.at("src"))
        #expect(selection.files.count == pack.index.files.count)
        for file in selection.files {
            let extracted = out + "/" + file.packPath
            #expect(
                try Array(Data(contentsOf: URL(fileURLWithPath: extracted)))
                    == Array(Data(contentsOf: URL(fileURLWithPath: file.absolutePath))),
                "\(file.packPath) differs")
            let st = try #require(try FileSystem.linkStatus(extracted))
            #expect(st.mode & 0o777 == file.mode, "\(file.packPath) has mode \(String(st.mode & 0o777, radix: 8))")
        }
        #expect((try dir.listing().filter { $0.contains(".partial-") }) == [], "staging left behind")
    }

    @Test func aFileThatGrowsOrShrinksWhileSelectedIsRefused() throws {
        let dir = try TemporaryDirectory("small-changed")
        defer { dir.remove() }
        try dir.write("src/a.txt", "hello")
        try dir.write("src/b.txt", "world")
        let (m, _) = try PackManifest.load(Array(SamplePack.manifest().utf8), source: "m")
        let selection = try SourceSelection(manifest: m, sourceRoot: dir.at("src"))
        try dir.write("src/b.txt", "world, and more")
        expectPackagingRefusedAsChanged(m, selection, in: dir)
    }

    /// The offset, in the index, of the file count (after the magic, the metadata and the chunk table).
    func fileCountOffset(_ index: PackIndex, _ bytes: [UInt8]) -> Int {
        let metaLength = Int(bytes[8]) | Int(bytes[9]) << 8 | Int(bytes[10]) << 16 | Int(bytes[11]) << 24
        return 8 + 4 + metaLength + 4 + 48 * index.chunks.count
    }

    @Test(arguments: [16_000_000, 1 << 24, (1 << 24) + 1, Int(UInt32.max)])
    func anIndexThatDeclaresMillionsOfFilesIsRefusedBeforeAllocating(declared: Int) throws {
        let crafted = try CraftedPack(files: [.init(path: "a.txt", bytes: Array("a".utf8))])
        var index = crafted.index.encoded
        let at = fileCountOffset(crafted.index, index)
        #expect(index[at..<at + 4] == [1, 0, 0, 0])
        withUnsafeBytes(of: UInt32(declared).littleEndian) { index.replaceSubrange(at..<at + 4, with: $0) }
        let header = PackHeader(
            indexOffset: crafted.header.indexOffset, indexLength: UInt64(index.count), indexDigest: SHA256.hash(index))
        #expect {
            _ = try PackIndex.decode(index, header: header, source: "crafted")
        } throws: { error in
            let e = error as? BacklotError
            return e?.code == .corruptArchive
                && (e?.message.contains(
                    "declares \(declared) files; a pack may hold at most \(PackIndex.Limits.fileCount)") ?? false)
        }
    }

    /// 17 components of 240 bytes: 4,096 bytes in all, the longest path a pack may hold.
    static let longest = Array(repeating: String(repeating: "n", count: 240), count: 17).joined(separator: "/")

    @Test func pathsAtTheLengthLimitAreTakenAndOneByteMoreIsRefused() throws {
        #expect(Self.longest.utf8.count == 4096)
        let component255 = String(repeating: "c", count: 255)
        let accepted = [Self.longest, component255, "d/" + component255]
        for path in accepted {
            let crafted = try CraftedPack(files: [.init(path: path, bytes: Array("x".utf8))])
            let index = try PackIndex.decode(crafted.index.encoded, header: crafted.header, source: "crafted")
            #expect(index.files.map(\.path) == [path])
        }
        let refused = [
            (Self.longest + "n", "outside 1…4096"), (String(repeating: "c", count: 256), "longer than 255 bytes"),
            ("d/" + String(repeating: "c", count: 256), "longer than 255 bytes"),
        ]
        for (path, phrase) in refused {
            let crafted = try CraftedPack(files: [.init(path: path, bytes: Array("x".utf8))])
            #expect {
                _ = try PackIndex.decode(crafted.index.encoded, header: crafted.header, source: "crafted")
            } throws: { error in
                "\(error)".contains(phrase)
            }
        }
    }

    @Test func aLongPathIsPackagedAndExtracted() throws {
        let dir = try TemporaryDirectory("small-long")
        defer { dir.remove() }
        // Six folders of 255 bytes: beyond what one component may hold, within what a path may.
        let folders = (0..<6).map {
            String(repeating: Character(UnicodeScalar(UInt8(ascii: "a") + UInt8($0))), count: 255)
        }
        let path = folders.joined(separator: "/") + "/leaf.txt"
        try dir.write("src/" + path, "deep")
        let pack = try PackReader(path: try SamplePack.build(in: dir))
        #expect(pack.index.files.map(\.path) == [path])
        try PackExtractor(pack: pack).extract(to: dir.at("out"))
        #expect(try dir.read("out/" + path) == Array("deep".utf8))
    }

    @Test func theOnePassPathCheckAgreesWithTheRules() throws {
        var g = SeededGenerator.fromEnvironment()
        print("theOnePassPathCheckAgreesWithTheRules seed: \(g.seed)")
        let alphabet: [String] = ["a", "b", ".", "/", "\\", " ", "[", "]", "\u{0}", "é", "..", "./"]
        var checked = 0
        for _ in 0..<20_000 {
            let length = Int(g.next() % 9)
            let path = (0..<length).map { _ in alphabet[Int(g.next() % UInt64(alphabet.count))] }.joined()
            #expect(SelectorPath.isNormalFilePath(path.utf8) == SelectorPath.isNormal(path), "\(path.debugDescription)")
            checked += 1
        }
        for path in [
            Self.longest, Self.longest + "n", String(repeating: "c", count: 255), String(repeating: "c", count: 256),
            "[a b]", "[ab]", "a/[b c]",
        ] {
            #expect(
                SelectorPath.isNormalFilePath(path.utf8) == SelectorPath.isNormal(path),
                "\(path.prefix(20))… (\(path.utf8.count) bytes)")
        }
        #expect(checked == 20_000)
    }
}
