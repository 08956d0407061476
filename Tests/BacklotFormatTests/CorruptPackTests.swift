import BacklotBasics
import BacklotCrypto
import BacklotTestSupport
import BacklotZstd
import Foundation
import Testing

@testable import BacklotFormat

/// Truncated, bit-flipped and crafted packs: `verify` and `extract` must refuse each one with a
/// clear error, and extraction must leave nothing behind.
@Suite struct CorruptPackTests {
    /// A small valid pack and its bytes.
    func samplePack(_ dir: TemporaryDirectory) throws -> (path: String, bytes: [UInt8], reader: PackReader) {
        try SamplePack.writeTree(in: dir)
        let path = try SamplePack.build(in: dir)
        return (path, try dir.read("out.pack"), try PackReader(path: path))
    }

    /// Writes a pack made of `frames` and `index`, with a correct header digest (so that the
    /// structural checks, not the digest, must catch what is wrong).
    func assemble(_ frames: [[UInt8]], _ index: PackIndex, to path: String) throws {
        let data = frames.flatMap { $0 }
        let indexBytes = index.encoded
        let header = PackHeader(
            formatVersion: index.formatVersion, indexOffset: UInt64(PackHeader.size + data.count),
            indexLength: UInt64(indexBytes.count), indexDigest: SHA256.hash(indexBytes))
        try Data(header.encoded + data + indexBytes).write(to: URL(fileURLWithPath: path))
    }

    /// The compressed frames of a pack, in chunk order.
    func frames(of pack: PackReader, bytes: [UInt8]) -> [[UInt8]] {
        pack.index.chunks.map { Array(bytes[Int($0.offset)..<Int($0.offset) + Int($0.compressedSize)]) }
    }

    func expectRefused(
        _ path: String, _ phrase: String, in dir: TemporaryDirectory, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        var message = ""
        do {
            try PackReader(path: path).verify()
            Issue.record("verify accepted a bad pack (expected '\(phrase)')", sourceLocation: sourceLocation)
        } catch let e as BacklotError {
            message = e.description
            #expect(e.code == .corruptArchive || e.code == .invalidInput, sourceLocation: sourceLocation)
            #expect(phrase.isEmpty || message.contains(phrase), "\(message)", sourceLocation: sourceLocation)
        } catch {
            Issue.record("unexpected \(error)", sourceLocation: sourceLocation)
        }
        let target = dir.at("extracted-\(UUID().uuidString)")
        #expect(throws: BacklotError.self, sourceLocation: sourceLocation) {
            try PackExtractor(pack: try PackReader(path: path)).extract(to: target)
        }
        #expect(!FileSystem.exists(target), sourceLocation: sourceLocation)
        #expect(
            (try? dir.listing().filter { $0.contains(".partial-") }) == [], "staging left behind",
            sourceLocation: sourceLocation)
    }

    @Test func truncatedPacksAreRefused() throws {
        let dir = try TemporaryDirectory("trunc")
        defer { dir.remove() }
        let (_, bytes, _) = try samplePack(dir)
        var g = SeededGenerator.fromEnvironment()
        print("truncatedPacksAreRefused seed: \(g.seed)")
        let lengths = [0, 10, 63, 64, 100, bytes.count - 1] + (0..<6).map { _ in Int(g.next() % UInt64(bytes.count)) }
        for length in lengths {
            let path = dir.at("t-\(length).pack")
            try Data(bytes.prefix(length)).write(to: URL(fileURLWithPath: path))
            expectRefused(path, length < 64 ? "shorter than a pack header" : "", in: dir)
        }
    }

    @Test func everyFlippedBitIsCaught() throws {
        let dir = try TemporaryDirectory("flip")
        defer { dir.remove() }
        let (_, bytes, pack) = try samplePack(dir)
        var g = SeededGenerator.fromEnvironment()
        print("everyFlippedBitIsCaught seed: \(g.seed) (set BACKLOT_TEST_SEED to replay)")
        // Fixed spots (magic, version, flags, offsets, digest, first chunk, index) plus random ones.
        var positions = [0, 8, 12, 16, 24, 32, 63, 64, Int(pack.header.indexOffset) + 3, bytes.count - 1]
        positions += (0..<24).map { _ in Int(g.next() % UInt64(bytes.count)) }
        for position in positions {
            var flipped = bytes
            flipped[position] ^= UInt8(1) << UInt8(g.next() % 8)
            let path = dir.at("f-\(position).pack")
            try Data(flipped).write(to: URL(fileURLWithPath: path))
            // A flip inside a chunk's zstd frame that leaves what it decompresses to unchanged (a
            // bit zstd does not read) is harmless: the content, every chunk's hash, is exact. Such
            // a pack must still verify; any flip that changes content must be refused.
            if let chunk = pack.index.chunks.first(where: { $0.range.contains(UInt64(position)) }) {
                let range = Int(chunk.offset)..<Int(chunk.offset) + Int(chunk.compressedSize)
                let before = try? ZstdDecompressor().decompress(
                    Array(bytes[range]), expectedSize: Int(chunk.uncompressedSize), dictionary: nil)
                let after = try? ZstdDecompressor().decompress(
                    Array(flipped[range]), expectedSize: Int(chunk.uncompressedSize), dictionary: nil)
                if let after, after == before {
                    print(
                        "everyFlippedBitIsCaught: the flip at \(position) changes no content (a bit zstd does not read)"
                    )
                    #expect(throws: Never.self) { try PackReader(path: path).verify() }
                    continue
                }
            }
            expectRefused(path, "", in: dir)
        }
    }

    @Test func aFlippedChunkByteIsReportedWithFileChunkAndOffset() throws {
        let dir = try TemporaryDirectory("chunkflip")
        defer { dir.remove() }
        let (_, bytes, pack) = try samplePack(dir)
        let victim = pack.index.files.first { $0.path == "readme.txt" }!
        let chunk = pack.index.chunks[victim.chunks[0]]
        var flipped = bytes
        flipped[Int(chunk.offset) + Int(chunk.compressedSize) / 2] ^= 0x10
        let path = dir.at("bad.pack")
        try Data(flipped).write(to: URL(fileURLWithPath: path))
        expectRefused(
            path, "file \"readme.txt\": \(path): chunk \(victim.chunks[0]) at offset \(chunk.offset)", in: dir)
    }

    @Test func craftedIndexesAreRefusedByName() throws {
        let dir = try TemporaryDirectory("craft")
        defer { dir.remove() }
        let (_, bytes, pack) = try samplePack(dir)
        let index = pack.index
        let f = frames(of: pack, bytes: bytes)
        func with(chunks: [PackIndex.Chunk]? = nil, files: [PackIndex.File]? = nil) -> PackIndex {
            PackIndex(
                metadata: index.metadata, chunking: index.chunking, chunks: chunks ?? index.chunks,
                files: files ?? Array(index.files))
        }
        func file(_ i: Int, path: String? = nil, size: UInt64? = nil, chunks: [Int]? = nil) -> PackIndex.File {
            let o = index.files[i]
            return PackIndex.File(
                path: path ?? o.path, mode: o.mode, size: size ?? o.size, digest: o.digest,
                chunks: chunks ?? Array(o.chunks))
        }
        let c0 = index.chunks[0]
        let c1 = index.chunks[1]
        var cases: [(String, PackIndex, String)] = []
        var chunks = index.chunks
        chunks[0] = .init(id: c0.id, offset: c0.offset, compressedSize: c0.compressedSize, uncompressedSize: 1 << 31)
        cases.append(("huge chunk", with(chunks: chunks), "outside 1…"))
        var files = Array(index.files)
        files[0] = file(0, size: 1 << 40)
        cases.append(("huge file", with(files: files), "declares 1099511627776 bytes"))
        chunks = index.chunks
        chunks[1] = .init(
            id: c1.id, offset: c0.offset, compressedSize: c1.compressedSize, uncompressedSize: c1.uncompressedSize)
        cases.append(("overlap", with(chunks: chunks), "overlaps the previous chunk"))
        chunks = index.chunks
        chunks[2] = .init(
            id: c0.id, offset: chunks[2].offset, compressedSize: chunks[2].compressedSize,
            uncompressedSize: chunks[2].uncompressedSize)
        cases.append(("repeated chunk ID", with(chunks: chunks), "chunk 2: ID \(c0.id.short)… appears twice"))
        chunks = index.chunks
        let last = chunks.count - 1
        chunks[last] = .init(
            id: chunks[last].id, offset: chunks[last].offset, compressedSize: chunks[last].compressedSize + 100,
            uncompressedSize: chunks[last].uncompressedSize)
        cases.append(("out of range", with(chunks: chunks), "past the start of the index"))
        files = Array(index.files)
        files[0] = file(0, path: "../evil")
        cases.append(("dot-dot path", with(files: files), "unsafe path \"../evil\""))
        files = Array(index.files)
        files[0] = file(0, path: "/etc/evil")
        cases.append(("absolute path", with(files: files), "unsafe path \"/etc/evil\""))
        files = Array(index.files)
        files[1] = file(1, path: files[0].path)
        cases.append(("duplicate path", with(files: files), "appears twice"))
        files = Array(index.files)
        files.swapAt(0, 2)
        cases.append(("unsorted", with(files: files), "out of order"))
        files = Array(index.files)
        files[2] = file(2, chunks: [999_999])
        cases.append(("bad reference", with(files: files), "refers to chunk 999999"))
        files = index.files.filter { $0.path != "Textures/noise.bin" }
        cases.append(("unreferenced chunk", with(files: files), "is not used by any file"))
        // "bin", "bin.txt", "bin/tool": the file "bin" and the folder "bin/" are not adjacent in order.
        let tool = index.files.first { $0.path == "bin/tool" }!
        files =
            index.files.filter { $0.path != "empty" } + [
                PackIndex.File(
                    path: "bin", mode: 0o644, size: 0, digest: index.files.first { $0.path == "empty" }!.digest,
                    chunks: []),
                PackIndex.File(
                    path: "bin.txt", mode: 0o644, size: 0, digest: index.files.first { $0.path == "empty" }!.digest,
                    chunks: []),
            ]
        files.sort { Array($0.path.utf8).lexicographicallyPrecedes(Array($1.path.utf8)) }
        _ = tool
        cases.append(("file and folder", with(files: files), "lies under \"bin\", which is a file"))

        for (name, crafted, phrase) in cases {
            let path = dir.at("\(name).pack")
            try assemble(f, crafted, to: path)
            expectRefused(path, phrase, in: dir)
        }
    }

    /// The repeat check by sorting stops at the chunk a set of the IDs seen would stop at: random
    /// tables with 0–3 groups of repeated IDs (seed printed).
    @Test func aRepeatedChunkIDIsFoundWhereASetWouldFindIt() {
        let seed = UInt64.random(in: 0...UInt64.max)
        print("CorruptPackTests.aRepeatedChunkIDIsFoundWhereASetWouldFindIt seed \(seed)")
        var g = SeededGenerator(seed: seed)
        for round in 0..<200 {
            let count = Int.random(in: 0...300, using: &g)
            var ids = (0..<count).map { _ in SHA256.hash((0..<8).map { _ in UInt8.random(in: 0...255, using: &g) }) }
            for _ in 0..<(count < 2 ? 0 : Int.random(in: 0...3, using: &g)) {
                ids[Int.random(in: 0..<count, using: &g)] = ids[Int.random(in: 0..<count, using: &g)]
            }
            let chunks = ids.map { PackIndex.Chunk(id: $0, offset: 0, compressedSize: 1, uncompressedSize: 1) }
            var seen = Set<SHA256Digest>()
            let expected = ids.indices.first { !seen.insert(ids[$0]).inserted }
            #expect(PackIndex.firstRepeatedID(chunks) == expected, "round \(round) of seed \(seed)")
        }
    }

    @Test func countsLargerThanTheIndexAreRefusedBeforeAllocating() throws {
        let dir = try TemporaryDirectory("count")
        defer { dir.remove() }
        let (_, bytes, pack) = try samplePack(dir)
        var indexBytes = pack.index.encoded
        let metaLength = Int(
            UInt32(indexBytes[8]) | UInt32(indexBytes[9]) << 8 | UInt32(indexBytes[10]) << 16 | UInt32(indexBytes[11])
                << 24)
        let countAt = 12 + metaLength
        indexBytes.replaceSubrange(countAt..<countAt + 4, with: [0xFF, 0xFF, 0xFF, 0x7F])
        let dataEnd = Int(pack.header.indexOffset)
        let header = PackHeader(
            indexOffset: UInt64(dataEnd), indexLength: UInt64(indexBytes.count), indexDigest: SHA256.hash(indexBytes))
        let path = dir.at("count.pack")
        try Data(header.encoded + bytes[64..<dataEnd] + indexBytes).write(to: URL(fileURLWithPath: path))
        expectRefused(path, "declares 2147483647 chunks", in: dir)

        // A header declaring a gigantic index is refused from the header alone.
        var h = bytes
        h.replaceSubrange(24..<32, with: [0, 0, 0, 0, 0, 0, 1, 0])
        try Data(h).write(to: URL(fileURLWithPath: path))
        expectRefused(path, "at most", in: dir)
    }

    @Test func aDecompressionBombCannotExpandPastItsDeclaredSize() throws {
        let dir = try TemporaryDirectory("bomb")
        defer { dir.remove() }
        // 4 MiB of zeros compress to a few hundred bytes; the index declares 100 bytes.
        let zeros = [UInt8](repeating: 0, count: 4 << 20)
        let frame = try ZstdCompressor(level: 3).compress(zeros)
        let declared = Array(zeros.prefix(100))
        let chunk = PackIndex.Chunk(
            id: SHA256.hash(declared), offset: 64, compressedSize: UInt32(frame.count), uncompressedSize: 100)
        let file = PackIndex.File(path: "bomb.bin", mode: 0o644, size: 100, digest: SHA256.hash(declared), chunks: [0])
        let metadata = PackMetadata(
            assetPackID: try PackID("Bomb"), downloadPolicy: .onDemand, platforms: [.linux], userInfo: nil,
            language: nil)
        let path = dir.at("bomb.pack")
        try assemble([frame], PackIndex(metadata: metadata, chunking: nil, chunks: [chunk], files: [file]), to: path)
        expectRefused(path, "more than the 100 allowed", in: dir)
    }

    @Test func notAPackAndNewerVersionsAreInvalidInput() throws {
        let dir = try TemporaryDirectory("magic")
        defer { dir.remove() }
        let (_, bytes, _) = try samplePack(dir)
        try Data(Array("PK\u{3}\u{4}".utf8) + bytes.dropFirst(4)).write(to: URL(fileURLWithPath: dir.at("zip.pack")))
        #expect { try PackReader(path: dir.at("zip.pack")) } throws: {
            ($0 as? BacklotError)?.message.contains("not a Backlot pack") == true
        }
        var newer = bytes
        newer[8] = 3
        try Data(newer).write(to: URL(fileURLWithPath: dir.at("v3.pack")))
        #expect { try PackReader(path: dir.at("v3.pack")) } throws: {
            guard let e = $0 as? BacklotError else { return false }
            return e.code == .invalidInput && e.hint?.contains("newer Backlot") == true
        }
        // A version-1 index labelled version 2 is read by version 2's layout, and refused.
        var relabelled = bytes
        relabelled[8] = 2
        try Data(relabelled).write(to: URL(fileURLWithPath: dir.at("v2.pack")))
        #expect { try PackReader(path: dir.at("v2.pack")) } throws: {
            ($0 as? BacklotError)?.code == .corruptArchive
        }
    }

    @Test func extractionRefusesANonEmptyTargetAndAcceptsAnEmptyOne() throws {
        let dir = try TemporaryDirectory("target")
        defer { dir.remove() }
        let (_, _, pack) = try samplePack(dir)
        try dir.write("busy/keep.txt", "mine")
        #expect { try PackExtractor(pack: pack).extract(to: dir.at("busy")) } throws: {
            ($0 as? BacklotError)?.code == .alreadyExists
        }
        #expect(try dir.read("busy/keep.txt") == Array("mine".utf8))
        try FileManager.default.createDirectory(atPath: dir.at("empty"), withIntermediateDirectories: false)
        try PackExtractor(pack: pack).extract(to: dir.at("empty"))
        #expect(try dir.listing("empty").contains("readme.txt"))
    }
}
