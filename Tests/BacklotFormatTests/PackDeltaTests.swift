import BacklotBasics
import BacklotCrypto
import BacklotTestSupport
import BacklotZstd
import Foundation
import Testing

@testable import BacklotFormat

/// Delta files (docs/format.md §14): built from two packs, decoded, applied, and refused when wrong.
@Suite struct PackDeltaTests {
    /// Two versions of a tree: the second has small edits (an overwrite, an insertion, a deletion) in two files.
    static func versions(_ dir: TemporaryDirectory, seed: UInt64) throws -> (PackReader, PackReader) {
        print("PackDeltaTests seed \(seed)")
        var g = SeededGenerator(seed: seed)
        let text = g.text(200_000)
        let bin = g.bytes(150_000)
        try dir.write("src/a.txt", text)
        try dir.write("src/b.bin", bin)
        try dir.write("src/c.txt", g.text(50_000))
        let one = try SamplePack.build(in: dir, name: "v1.pack")
        var t = text
        t.replaceSubrange(10_000..<10_050, with: g.text(50))
        t.insert(contentsOf: g.text(200), at: 120_000)
        var b = bin
        b.removeSubrange(70_000..<70_300)
        try dir.write("src/a.txt", t)
        try dir.write("src/b.bin", b)
        let two = try SamplePack.build(in: dir, name: "v2.pack")
        return (try PackReader(path: one), try PackReader(path: two))
    }

    @Test func aDeltaRebuildsEveryChangedChunkAndTheIndex() throws {
        let dir = try TemporaryDirectory("delta")
        defer { dir.remove() }
        let (v1, v2) = try Self.versions(dir, seed: 1510)
        let result = try DeltaBuilder().build(base: v1, target: v2)
        #expect(result.missingChunks > 0)
        #expect(result.delta.entries.count == result.missingChunks, "every edited chunk has a delta")
        #expect(UInt64(result.bytes.count) * 10 < result.missingBytes, "a few edits cost far less than the chunks")
        let prefix = Array(result.bytes.prefix(Int(result.delta.prefixLength)))
        let decoded = try PackDelta.decodePrefix(
            prefix, base: v1.packDigest, target: v2.packDigest, fileSize: UInt64(result.bytes.count), source: "t")
        #expect(decoded == result.delta)
        let d = ZstdDecompressor()
        let index = try decoded.rebuildIndex(
            from: try v1.indexBytes(), expected: v2.packDigest, using: d, source: "t")
        #expect(index == (try v2.indexBytes()))
        var oldChunks: [SHA256Digest: [UInt8]] = [:]
        for c in v1.index.chunks.indices { oldChunks[v1.index.chunks[c].id] = try v1.readChunk(c, using: d) }
        var newChunks: [SHA256Digest: [UInt8]] = [:]
        for c in v2.index.chunks.indices { newChunks[v2.index.chunks[c].id] = try v2.readChunk(c, using: d) }
        for e in decoded.entries {
            let prefix = e.bases.flatMap { oldChunks[$0]! }
            let plain = try result.bytes.withUnsafeBytes {
                try PackDelta.apply(
                    e, frame: UnsafeRawBufferPointer(rebasing: $0[Int(e.offset)..<Int(e.offset) + Int(e.length)]),
                    prefix: prefix, using: d, source: "t")
            }
            #expect(plain == newChunks[e.target])
        }
    }

    @Test func aChangedDeltaOrAWrongBaseIsCaughtByTheTargetHash() throws {
        let dir = try TemporaryDirectory("delta-bad")
        defer { dir.remove() }
        let (v1, v2) = try Self.versions(dir, seed: 1511)
        let result = try DeltaBuilder().build(base: v1, target: v2)
        let d = ZstdDecompressor()
        let e = try #require(result.delta.entries.first)
        let base = e.bases.flatMap { id in try! v1.readChunk(v1.index.chunks.firstIndex { $0.id == id }!, using: d) }
        var frame = Array(result.bytes[Int(e.offset)..<Int(e.offset) + Int(e.length)])
        frame[frame.count / 2] ^= 0x40
        #expect(throws: BacklotError.self) {
            try frame.withUnsafeBytes { try PackDelta.apply(e, frame: $0, prefix: base, using: d, source: "t") }
        }
        let good = Array(result.bytes[Int(e.offset)..<Int(e.offset) + Int(e.length)])
        var wrongBase = base
        wrongBase[100] ^= 1
        wrongBase[base.count - 100] ^= 1
        #expect(throws: BacklotError.self) {
            try good.withUnsafeBytes { try PackDelta.apply(e, frame: $0, prefix: wrongBase, using: d, source: "t") }
        }
        // An entry that declares a smaller target stops there.
        let small = PackDelta.Entry(
            target: e.target, offset: e.offset, length: e.length, targetSize: e.targetSize - 1, bases: e.bases)
        #expect(throws: BacklotError.self) {
            try good.withUnsafeBytes { try PackDelta.apply(small, frame: $0, prefix: base, using: d, source: "t") }
        }
    }

    @Test func aPrefixThatBreaksARuleIsRefused() throws {
        let dir = try TemporaryDirectory("delta-rules")
        defer { dir.remove() }
        let (v1, v2) = try Self.versions(dir, seed: 1512)
        let result = try DeltaBuilder().build(base: v1, target: v2)
        let size = UInt64(result.bytes.count)
        let prefix = Array(result.bytes.prefix(Int(result.delta.prefixLength)))
        let decode = { (bytes: [UInt8], base: SHA256Digest, target: SHA256Digest, size: UInt64) in
            _ = try PackDelta.decodePrefix(bytes, base: base, target: target, fileSize: size, source: "t")
        }
        #expect(throws: BacklotError.self) { try decode(prefix, v2.packDigest, v2.packDigest, size) }
        #expect(throws: BacklotError.self) { try decode(prefix, v1.packDigest, v1.packDigest, size) }
        #expect(throws: BacklotError.self) { try decode(prefix, v1.packDigest, v2.packDigest, size + 1) }
        #expect(throws: BacklotError.self) { try decode(Array(prefix.dropLast()), v1.packDigest, v2.packDigest, size) }
        var magic = prefix
        magic[0] = 0
        #expect(throws: BacklotError.self) { try decode(magic, v1.packDigest, v2.packDigest, size) }
        try decode(prefix, v1.packDigest, v2.packDigest, size)
    }
}
