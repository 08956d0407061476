import BacklotBasics
import BacklotCrypto
import BacklotTestSupport
import Dispatch
import Foundation
import Synchronization
import Testing

@testable import BacklotFormat

/// Where a delta's builder looks for a new chunk's bytes in the old version (``ChunkResemblance``),
/// and the samples the deltas into one version share (``ChunkSampleCache``).
@Suite struct ChunkResemblanceTests {
    /// The samples as the one-byte-a-step definition gives them.
    static func reference(_ bytes: [UInt8]) -> [UInt32] {
        var h: UInt64 = 0
        var out: [UInt32] = []
        for (i, b) in bytes.enumerated() {
            h = (h &<< 1) &+ Chunker.gear[Int(b)]
            if i >= 63 && h >> 56 == 0 { out.append(UInt32(h >> 32)) }
        }
        return out
    }

    @Test(arguments: [UInt64(5101), 5102])
    func samplesTakenTwoBytesAStepAreTheDefinitions(seed: UInt64) {
        print("ChunkResemblanceTests seed \(seed)")
        var g = SeededGenerator(seed: seed)
        var inputs = [0, 1, 62, 63, 64, 65, 66, 4095, 70_001, 70_002].map { count in
            count % 2 == 0 ? g.bytes(count) : g.text(count)
        }
        // Points at neighbouring positions (both of a step), and a run of one byte.
        inputs += [Self.steered(4096, seed: seed), Self.steered(4097, seed: seed), [UInt8](repeating: 0, count: 5000)]
        for bytes in inputs {
            var taken: [UInt32] = []
            ChunkResemblance.samples(bytes) { taken.append($0) }
            #expect(taken == Self.reference(bytes), "\(bytes.count) bytes")
        }
    }

    /// Bytes steered so that the gear hash has its top 8 bits zero at as many positions as can be.
    static func steered(_ count: Int, seed: UInt64) -> [UInt8] {
        var g = SeededGenerator(seed: seed)
        var h: UInt64 = 0
        var bytes: [UInt8] = []
        for i in 0..<count {
            var chosen = g.bytes(1)[0]
            if i >= 63 {
                for b in 0..<256 where ((h &<< 1) &+ Chunker.gear[b]) >> 56 == 0 {
                    chosen = UInt8(b)
                    break
                }
            }
            h = (h &<< 1) &+ Chunker.gear[Int(chosen)]
            bytes.append(chosen)
        }
        return bytes
    }

    @Test func aChunkSteeredToBeAllSamplesKeepsABoundedNumberAndIsStillFound() throws {
        let bytes = Self.steered(64 << 10, seed: 5103)
        let every = Self.reference(bytes)
        #expect(every.count > bytes.count / 4, "the steering worked: \(every.count) samples")
        let kept = ChunkResemblance.indexSamples(bytes)
        #expect(kept.count <= bytes.count / ChunkResemblance.densest)
        #expect(kept == Array(Set(every)).sorted().prefix(kept.count).map { $0 }, "the lowest are kept")
        var g = SeededGenerator(seed: 5104)
        let other = g.bytes(64 << 10)
        let index = try ChunkResemblance(
            chunks: [(0, SHA256.hash(other)), (1, SHA256.hash(bytes))], cache: ChunkSampleCache()
        ) { $0 == 0 ? other : bytes }
        let match = index.similar(to: ChunkResemblance.indexSamples(bytes), size: bytes.count, atMost: 4)
        #expect(match.chunks == [1])
        #expect(!match.unfound)
    }

    @Test func theTableFindsEverySampleAndKeepsFourOwners() {
        var table = ChunkResemblance.SampleTable(capacity: 3000)
        var g = SeededGenerator(seed: 5105)
        var added: [UInt32: [Int]] = [:]
        for i in 0..<3000 {
            // Samples are below 2^24; a few repeat, and some share their table slot.
            let sample = i % 7 == 0 ? UInt32(i % 50) : UInt32(g.next() % (1 << 24))
            table.add(sample, owner: i / 3)
            if !(added[sample]?.contains(i / 3) ?? false) { added[sample, default: []].append(i / 3) }
        }
        for (sample, owners) in added {
            #expect(table.owners(of: sample).map { Array($0) } == Array(owners.prefix(4)), "sample \(sample)")
        }
        var absent = 0
        for s in UInt32(1 << 24 - 2000)..<UInt32(1 << 24) where added[s] == nil {
            #expect(table.owners(of: s) == nil)
            absent += 1
        }
        #expect(absent > 1000)
    }

    @Test func claimsAreGivenOnceAndGivenBack() {
        let cache = ChunkSampleCache()
        let id = SHA256.hash([1, 2, 3])
        guard case .yours = cache.claim(id) else {
            Issue.record("the first claim is the claimer's")
            return
        }
        guard case .others = cache.claim(id) else {
            Issue.record("a claimed chunk is another build's")
            return
        }
        cache.abandon(id)
        guard case .yours = cache.claim(id) else {
            Issue.record("an abandoned claim is free again")
            return
        }
        // Samples offered for a chunk no build claimed leave another build's claim alone.
        let other = SHA256.hash([4])
        _ = cache.claim(other)
        cache.offer(other, samples: [])
        guard case .done = cache.claim(other) else {
            Issue.record("offered samples are given")
            return
        }
        let third = SHA256.hash([5])
        _ = cache.claim(third)
        let full = ChunkSampleCache(limit: 0)
        full.offer(third, samples: [1])
        guard case .others = cache.claim(third) else {
            Issue.record("a claim stays until its build finishes or abandons it")
            return
        }
        let samples: [UInt32] = [7, 9]
        cache.finish(id, samples: samples)
        guard case .done(let given) = cache.claim(id) else {
            Issue.record("kept samples are given")
            return
        }
        #expect(given == [7, 9])
        #expect(cache.heldBytes == 2 * ChunkSampleCache.entryBytes + samples.capacity * 4)
        full.finish(id, samples: [7])
        #expect(full.samples(of: id) == nil, "a cache without room keeps nothing")
        #expect(full.heldBytes == 0)
    }

    /// Three versions of a tree of edited files, packed: small edits to four files of six in each
    /// version, and in the third a file replaced and one with new text in it.
    static func versions(_ dir: TemporaryDirectory, seed: UInt64) throws -> [String] {
        print("ChunkResemblanceTests seed \(seed)")
        var g = SeededGenerator(seed: seed)
        var files = (0..<6).map { i in i % 2 == 0 ? g.text(120_000) : g.bytes(90_000) }
        var packs: [String] = []
        for v in 1...3 {
            for (i, f) in files.enumerated() { try dir.write("src/f\(i)", f) }
            packs.append(try SamplePack.build(in: dir, name: "v\(v).pack"))
            for i in files.indices where (i + v) % 3 != 0 {
                let at = Int(g.next() % UInt64(files[i].count - 500))
                files[i].replaceSubrange(at..<at + Int(g.next() % 300), with: g.text(Int(g.next() % 300)))
            }
            if v == 2 {
                // Two files left as they were since version 1: one replaced by new bytes, one with
                // 3 KB of new text (both have their whole old version sampled).
                files[5] = g.bytes(files[5].count)
                files[2].insert(contentsOf: g.text(3000), at: 60_000)
            }
        }
        return packs
    }

    /// Frames a builder read.
    final class Reads: Sendable {
        let count = Atomic(0)
    }

    /// A local pack as the builder reads it, counting the frames read.
    static func input(_ path: String, reads: Reads = Reads()) throws -> DeltaBuilder.Input {
        let reader = try PackReader(path: path)
        return DeltaBuilder.Input(
            index: reader.index, indexBytes: try reader.indexBytes(), packDigest: reader.packDigest
        ) { count, offset in
            reads.count.add(1, ordering: .relaxed)
            return try reader.readFrames(offset..<offset + UInt64(count))
        }
    }

    @Test func deltasBuiltTogetherShareSamplesAndAreTheSameAsAlone() throws {
        let dir = try TemporaryDirectory("resemblance")
        defer { dir.remove() }
        let packs = try Self.versions(dir, seed: 5106)
        let alone = try packs.dropLast().map { base in
            try DeltaBuilder().build(base: PackReader(path: base), target: PackReader(path: packs[2])).bytes
        }
        #expect(alone.allSatisfy { !$0.isEmpty })
        // The delta from version 2 with a cache the delta from version 1 filled: the same bytes,
        // fewer of its base's chunks read than with a cache of its own.
        func build(from base: String, with cache: ChunkSampleCache) throws -> (bytes: [UInt8], reads: Int) {
            let reads = Reads()
            let built = try DeltaBuilder().build(
                base: Self.input(base, reads: reads), target: Self.input(packs[2]), samples: cache)
            return (built.bytes, reads.count.load(ordering: .relaxed))
        }
        let fresh = try build(from: packs[1], with: ChunkSampleCache())
        let warm = ChunkSampleCache()
        #expect(try build(from: packs[0], with: warm).bytes == alone[0])
        let shared = try build(from: packs[1], with: warm)
        #expect(fresh.bytes == alone[1])
        #expect(shared.bytes == alone[1])
        #expect(shared.reads < fresh.reads, "samples taken once: \(shared.reads) reads, \(fresh.reads) alone")
        // On two threads at once with one cache: the same deltas.
        let both = ChunkSampleCache()
        let together = Mutex<[Int: Result<[UInt8], any Error>]>([:])
        DispatchQueue.concurrentPerform(iterations: 2) { i in
            let built = Result {
                try DeltaBuilder().build(base: Self.input(packs[i]), target: Self.input(packs[2]), samples: both).bytes
            }
            together.withLock { $0[i] = built }
        }
        for i in 0..<2 { #expect(try together.withLock { $0[i] }?.get() == alone[i]) }
    }

    @Test func aChunkAnotherBuildIsSamplingIsSampledAtTheEndAndAFailedReadGivesItsClaimBack() throws {
        var g = SeededGenerator(seed: 5108)
        let chunks = (0..<3).map { _ in g.bytes(20_000) }
        let ids = chunks.map { SHA256.hash($0) }
        let listed = (0..<3).map { ($0, ids[$0]) }
        let expected = try ChunkResemblance(chunks: listed, cache: ChunkSampleCache()) { chunks[$0] }
        // Chunk 1 is claimed by a build that never finishes: this one samples it itself, last.
        let cache = ChunkSampleCache()
        guard case .yours = cache.claim(ids[1]) else {
            Issue.record("the claim is this test's")
            return
        }
        var asked: [Int] = []
        let index = try ChunkResemblance(chunks: listed, cache: cache) {
            asked.append($0)
            return chunks[$0]
        }
        #expect(asked == [0, 2, 1])
        for (i, chunk) in chunks.enumerated() {
            let samples = ChunkResemblance.indexSamples(chunk)
            #expect(
                index.similar(to: samples, size: chunk.count, atMost: 4).chunks
                    == expected.similar(to: samples, size: chunk.count, atMost: 4).chunks)
            #expect(index.similar(to: samples, size: chunk.count, atMost: 4).chunks == [i])
        }
        // A chunk that cannot be read: the error is the caller's, the claim is given back.
        let failing = ChunkSampleCache()
        #expect(throws: BacklotError.self) {
            _ = try ChunkResemblance(chunks: [(0, ids[0])], cache: failing) { _ in
                throw BacklotError(.corruptArchive, "unreadable")
            }
        }
        guard case .yours = failing.claim(ids[0]) else {
            Issue.record("a claim whose chunk could not be read is free again")
            return
        }
    }

    @Test func bytesCopiedFromAPartLeftAsItWasAreFoundThere() throws {
        let dir = try TemporaryDirectory("resemblance-copy")
        defer { dir.remove() }
        var g = SeededGenerator(seed: 5107)
        let old = g.bytes(300_000)
        try dir.write("src/f", old)
        let one = try SamplePack.build(in: dir, name: "v1.pack")
        // 12 KB of the file's start copied near its end, with a little new around it.
        var new = old
        new.insert(contentsOf: g.bytes(40) + old[20_000..<32_000] + g.bytes(40), at: 250_000)
        try dir.write("src/f", new)
        let two = try SamplePack.build(in: dir, name: "v2.pack")
        let (v1, v2) = (try PackReader(path: one), try PackReader(path: two))
        let result = try DeltaBuilder().build(base: v1, target: v2)
        // The chunks that held the copied bytes: both versions hold them, so they are found only
        // when the whole old file is looked at, not just the chunks the target no longer has
        // (and the chunks at the copy's place, which a delta falls back to, are far from them).
        var source = Set<SHA256Digest>()
        var offset = 0
        for c in v1.index.files[0].chunks {
            let size = Int(v1.index.chunks[c].uncompressedSize)
            if offset < 32_000 && offset + size > 20_000 { source.insert(v1.index.chunks[c].id) }
            offset += size
        }
        let kept = Set(v2.index.chunks.map(\.id))
        #expect(!source.isEmpty && source.isSubset(of: kept))
        let bases = Set(result.entries.flatMap(\.bases))
        #expect(!bases.isDisjoint(with: source), "a base among the chunks the bytes were copied from")
        #expect(UInt64(result.bytes.count) * 4 < result.missingBytes, "the copy costs little")
    }
}
