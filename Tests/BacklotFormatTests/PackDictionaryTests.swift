import BacklotBasics
import BacklotCrypto
import BacklotTestSupport
import BacklotZstd
import Foundation
import Testing

@testable import BacklotFormat

/// Format version 2 (#18): a pack of many small files gets a zstd dictionary and a compact
/// index, is smaller, stays deterministic and round-trips; packs without enough small files, or
/// whose small files a dictionary does not help, stay version 1; and every rule of version 2's
/// index is enforced by name.
@Suite struct PackDictionaryTests {
    /// `count` small text files (100 a folder), plus a few of other kinds.
    func writeTexts(in dir: TemporaryDirectory, count: Int, seed: UInt64, random: Bool = false) throws {
        var g = SeededGenerator(seed: seed)
        for i in 0..<count {
            let size = 400 + Int(g.next() % 3600)
            try dir.write(
                "src/t/\(String(format: "%03d", i / 100))/f\(String(format: "%05d", i)).txt",
                random ? g.bytes(size) : g.text(size))
        }
        try dir.write("src/t/empty", [])
        try dir.write("src/t/tool", g.bytes(3000), mode: 0o755)
        try dir.write("src/t/large.bin", g.text(200_000))
    }

    @Test func manySmallTextFilesGetADictionaryAndASmallerDeterministicPack() throws {
        let dir = try TemporaryDirectory("dictionary-pack")
        defer { dir.remove() }
        var g = SeededGenerator.fromEnvironment()
        print("manySmallTextFilesGetADictionaryAndASmallerDeterministicPack seed: \(g.seed)")
        try writeTexts(in: dir, count: 1_200, seed: g.next())
        let one = try SamplePack.build(in: dir, name: "one.pack", jobs: 1)
        let two = try SamplePack.build(in: dir, name: "two.pack", jobs: 2)
        let plain = try SamplePack.build(in: dir, name: "plain.pack", dictionary: false)
        let samePacks = try dir.read("one.pack") == dir.read("two.pack")
        #expect(samePacks, "the pack depends on the thread count")

        let pack = try PackReader(path: two)
        #expect(pack.header.formatVersion == 2 && pack.index.formatVersion == 2)
        #expect((pack.index.dictionary?.bytes.count ?? 0) > 0, "no dictionary")
        #expect((pack.index.dictionary?.bytes.count ?? .max) <= PackDictionary.maximumCapacity)
        let v1 = try PackReader(path: plain)
        #expect(v1.header.formatVersion == 1 && v1.index.dictionary == nil)
        let sameFiles = pack.index.files == v1.index.files
        #expect(sameFiles, "not the same files, paths, modes, sizes and digests")
        let sameChunks = pack.index.chunks.map(\.id) == v1.index.chunks.map(\.id)
        #expect(sameChunks, "not the same chunks")
        #expect(
            pack.fileSize * 10 < v1.fileSize * 8,
            "with a dictionary \(pack.fileSize) bytes, without \(v1.fileSize): not 20 % smaller")
        #expect(pack.header.indexLength < v1.header.indexLength, "the compact index is not smaller")

        try pack.verify()
        let out = dir.at("out")
        try PackExtractor(pack: pack, jobs: 2).extract(to: out)
        for file in v1.index.files {
            #expect(
                SHA256.hash(try dir.read("out/" + file.path)) == file.digest, "\(file.path) differs after extraction")
        }
        // The index reads back to what was written, byte for byte.
        let bytes = try pack.indexBytes()
        let decodedAlike = try PackIndex.decode(bytes, header: pack.header, source: "again") == pack.index
        #expect(decodedAlike, "decoded differently")
        let encodedAlike = pack.index.encoded == bytes
        #expect(encodedAlike, "encoded differently")
    }

    @Test func fewOrIncompressibleSmallFilesGetNoDictionary() throws {
        let dir = try TemporaryDirectory("dictionary-none")
        defer { dir.remove() }
        var g = SeededGenerator.fromEnvironment()
        print("fewOrIncompressibleSmallFilesGetNoDictionary seed: \(g.seed)")
        try writeTexts(in: dir, count: PackDictionary.minimumFiles - 2, seed: g.next())
        let few = try PackReader(path: try SamplePack.build(in: dir, name: "few.pack"))
        #expect(few.header.formatVersion == 1 && few.index.dictionary == nil)

        let random = try TemporaryDirectory("dictionary-random")
        defer { random.remove() }
        try writeTexts(in: random, count: 1_100, seed: g.next(), random: true)
        let noise = try PackReader(path: try SamplePack.build(in: random, name: "noise.pack"))
        #expect(noise.index.dictionary == nil, "a dictionary that cannot pay for itself was kept")
    }

    /// The samples are read, hashed and compressed once, to train and measure the dictionary: what
    /// that made for each is what packing it in its turn makes, with the dictionary when it is
    /// kept and without when it is not, so the pack is the same as if they were packed again.
    @Test(arguments: [false, true]) func theSamplesArePackedAsTheirTurnWouldPackThem(random: Bool) throws {
        let dir = try TemporaryDirectory("dictionary-samples")
        defer { dir.remove() }
        var g = SeededGenerator.fromEnvironment()
        print("theSamplesArePackedAsTheirTurnWouldPackThem(random: \(random)) seed: \(g.seed)")
        try writeTexts(in: dir, count: 1_100, seed: g.next(), random: random)
        let (m, _) = try PackManifest.load(Array(SamplePack.manifest().utf8), source: "m")
        let selection = try SourceSelection(manifest: m, sourceRoot: dir.at("src"))
        let root = try DirectoryHandle(path: selection.sourceRoot)
        let chunker = Chunker()
        let prepared = try PackDictionary.train(
            for: selection.files, root: root, level: 3, jobs: 2, chunker: chunker, readingAhead: false)
        #expect((prepared.dictionary == nil) == random, "dictionary kept: \(prepared.dictionary != nil)")
        #expect(prepared.samples.count >= PackDictionary.minimumFiles, "\(prepared.samples.count) samples packed")
        let compressor = ZstdCompressor(level: 3, dictionary: prepared.dictionary)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: SmallBatch.fileLimit + 1, alignment: 16)
        defer { buffer.deallocate() }
        for (index, packed) in prepared.samples {
            let inTurn = try SmallBatch.pack(
                selection.files[index], root: root, buffer: buffer, chunker: chunker, compressor: compressor,
                alreadyStored: StoredChunks(expected: 0))
            #expect(
                packed.digest == inTurn.digest && packed.pieces.map(\.id) == inTurn.pieces.map(\.id)
                    && packed.pieces.map(\.length) == inTurn.pieces.map(\.length)
                    && packed.pieces.map(\.compressed) == inTurn.pieces.map(\.compressed),
                "\(selection.files[index].sourcePath): packed otherwise as a sample")
        }
    }

    /// A version-2 pack of three text files against a trained dictionary, made by hand.
    func crafted() throws -> CraftedPack {
        var g = SeededGenerator(seed: 48)
        let samples = (0..<400).map { _ in g.text(1_000) }
        let dictionary = try #require(ZstdDictionary.train(samples: samples, capacity: 8 << 10))
        return try CraftedPack(
            files: [
                .init(path: "a/one.txt", bytes: g.text(900)), .init(path: "a/two.txt", bytes: g.text(1_100)),
                .init(path: "b.txt", bytes: g.text(150_000)),
            ], chunkSize: 64 << 10, dictionary: dictionary)
    }

    /// Decodes `index` as the index of `pack`, with a header whose digest matches it.
    func decode(_ index: [UInt8], like pack: CraftedPack) throws -> PackIndex {
        let header = PackHeader(
            formatVersion: 2, indexOffset: pack.header.indexOffset, indexLength: UInt64(index.count),
            indexDigest: SHA256.hash(index))
        return try PackIndex.decode(index, header: header, source: "crafted")
    }

    func expectRefused(
        _ index: [UInt8], like pack: CraftedPack, _ phrase: String, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(sourceLocation: sourceLocation) {
            _ = try decode(index, like: pack)
        } throws: { error in
            let e = error as? BacklotError
            let ok = e?.code == .corruptArchive && (e?.message.contains(phrase) ?? false)
            if !ok { print("expected '\(phrase)', got \(error)") }
            return ok
        }
    }

    @Test func craftedVersionTwoIndexesAreRefusedByName() throws {
        let pack = try crafted()
        let index = pack.index.encoded
        let decodedAlike = try decode(index, like: pack) == pack.index
        #expect(decodedAlike, "decoded differently")
        guard let dictionary = pack.index.dictionary else {
            Issue.record("the crafted pack has no dictionary")
            return
        }
        // Offsets in version 2's layout: magic, metadata, dictionary, chunks (40 bytes each), files.
        let metaLength = Int(index[8]) | Int(index[9]) << 8 | Int(index[10]) << 16 | Int(index[11]) << 24
        let dictionaryAt = 12 + metaLength
        let chunksAt = dictionaryAt + 4 + dictionary.bytes.count
        let filesAt = chunksAt + 4 + 40 * pack.index.chunks.count
        // File 0: shared 0, suffix "a/one.txt"; file 1: shared 2 ("a/"), suffix "two.txt".
        let first = filesAt + 4
        let firstEnd = first + 4 + 9 + 2 + 4 + 4  // lengths, suffix, mode, count, one reference
        #expect(index[firstEnd] == 2, "file 1 shares \"a/\" with file 0")

        func patched(_ at: Int, _ bytes: [UInt8]) -> [UInt8] {
            var copy = index
            copy.replaceSubrange(at..<at + bytes.count, with: bytes)
            return copy
        }
        expectRefused(patched(dictionaryAt, [4, 0, 0, 0]), like: pack, "the dictionary is 4 bytes")
        expectRefused(patched(dictionaryAt, [0, 0, 0x20, 0]), like: pack, "the dictionary is 2097152 bytes")
        expectRefused(patched(dictionaryAt + 4, [0, 0, 0, 0]), like: pack, "not a zstd dictionary")
        expectRefused(
            patched(chunksAt, [0xFF, 0xFF, 0, 0]), like: pack, "declares 65535 chunks but has room for at most")
        expectRefused(
            patched(filesAt, [0xFF, 0xFF, 0xFF, 0]), like: pack, "declares 16777215 files; a pack may hold at most")
        expectRefused(
            patched(filesAt, [0xFF, 0xFF, 0x0F, 0]), like: pack, "declares 1048575 files but has room for at most")
        // Shared bytes beyond the previous path, fewer than the paths have in common, a path
        // that repeats or goes back.
        expectRefused(patched(first, [1, 0]), like: pack, "shares 1 bytes with the previous path, which has 0")
        var understated = patched(firstEnd, [1, 0])
        understated[firstEnd + 4] = UInt8(ascii: "/")  // "a" + "/wo.txt": the "/" was shared
        expectRefused(understated, like: pack, "but they have more in common")
        expectRefused(patched(firstEnd, [10, 0]), like: pack, "shares 10 bytes with the previous path, which has 9")
        expectRefused(patched(firstEnd + 2, [0, 0]), like: pack, "repeats the previous path")
        expectRefused(patched(firstEnd + 4, Array("a".utf8)), like: pack, "is out of order")
        expectRefused(patched(first + 4 + 9, [0xA5, 0x01]), like: pack, "mode 645 is not 644 or 755")
        // A reference past the chunk table, and trailing bytes.
        expectRefused(patched(first + 4 + 9 + 2 + 4, [9, 0, 0, 0]), like: pack, "refers to chunk 9")
        expectRefused(index + [0], like: pack, "unexpected bytes after the last file record")
    }

    @Test func aVersionTwoPackWithAnotherDictionaryIsRefusedWhenItsChunksAreRead() throws {
        let dir = try TemporaryDirectory("dictionary-swap")
        defer { dir.remove() }
        let pack = try crafted()
        var g = SeededGenerator(seed: 49)
        let other = try #require(
            ZstdDictionary.train(samples: (0..<400).map { _ in g.text(1_000) }, capacity: 8 << 10))
        // Same frames, the index naming another dictionary (and a digest that matches it).
        let swapped = PackIndex(
            metadata: pack.index.metadata, chunking: nil, chunks: pack.index.chunks, files: pack.index.files,
            dictionary: other)
        let indexBytes = swapped.encoded
        let frames = Array(pack.bytes[PackHeader.size..<Int(pack.header.indexOffset)])
        let header = PackHeader(
            formatVersion: 2, indexOffset: pack.header.indexOffset, indexLength: UInt64(indexBytes.count),
            indexDigest: SHA256.hash(indexBytes))
        try Data(header.encoded + frames + indexBytes).write(to: URL(fileURLWithPath: dir.at("swapped.pack")))
        #expect {
            try PackReader(path: dir.at("swapped.pack")).verify()
        } throws: { ($0 as? BacklotError)?.code == .corruptArchive }
        #expect(throws: BacklotError.self) {
            try PackExtractor(pack: try PackReader(path: dir.at("swapped.pack"))).extract(to: dir.at("out"))
        }
        #expect(!FileSystem.exists(dir.at("out")))
        try Data(pack.bytes).write(to: URL(fileURLWithPath: dir.at("right.pack")))
        try PackReader(path: dir.at("right.pack")).verify()
    }
}
