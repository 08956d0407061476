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
        #expect(result.rebuiltChunks == result.missingChunks, "every edited chunk has a delta")
        #expect(result.delta.formatVersion == 3)
        // A small update of files every device installs: every frame is early.
        #expect(result.delta.earlyCount == result.entries.count)
        #expect(UInt64(result.bytes.count) * 10 < result.missingBytes, "a few edits cost far less than the chunks")
        let prefix = Array(result.bytes.prefix(Int(result.delta.prefixLength)))
        let decoded = try PackDelta.decodePrefix(
            prefix, base: v1.packDigest, target: v2.packDigest, fileSize: UInt64(result.bytes.count), source: "t")
        #expect(decoded == result.delta)
        #expect(try decoded.entries(base: v1.index, target: v2.index, source: "t") == result.entries)
        let d = ZstdDecompressor()
        var oldChunks: [SHA256Digest: [UInt8]] = [:]
        for c in v1.index.chunks.indices { oldChunks[v1.index.chunks[c].id] = try v1.readChunk(c, using: d) }
        var newChunks: [SHA256Digest: [UInt8]] = [:]
        for c in v2.index.chunks.indices { newChunks[v2.index.chunks[c].id] = try v2.readChunk(c, using: d) }
        // The index delta leaves the early chunks' IDs out: they come from the early frames.
        #expect(throws: BacklotError.self) {
            try decoded.rebuildIndex(from: try v1.indexBytes(), expected: v2.packDigest, using: d, source: "t")
        }
        let early = Array(result.bytes[Int(decoded.earlyRange.lowerBound)..<Int(decoded.earlyRange.upperBound)])
        let rebuilt = try #require(
            try decoded.rebuildIndex(
                from: try v1.indexBytes(), expected: v2.packDigest, earlyFrames: early, base: v1.index,
                baseChunk: { oldChunks[v1.index.chunks[$0].id]! }, using: d, source: "t"))
        #expect(rebuilt.bytes == (try v2.indexBytes()))
        #expect(
            rebuilt.early == result.entries.prefix(decoded.earlyCount).map { $0.targets.flatMap { newChunks[$0.id]! } })
        for e in result.entries {
            let prefix = e.bases.flatMap { oldChunks[$0]! }
            let plain = try result.bytes.withUnsafeBytes {
                try PackDelta.apply(
                    e, frame: UnsafeRawBufferPointer(rebasing: $0[Int(e.offset)..<Int(e.offset) + Int(e.length)]),
                    prefix: prefix, using: d, source: "t")
            }
            #expect(plain == e.targets.flatMap { newChunks[$0.id]! })
        }
    }

    /// Builds v1 from `before` and v2 from `after` (path → bytes), 16 KiB chunks on average, and
    /// the delta between them; checks every entry rebuilds its chunk.
    static func delta(
        _ dir: TemporaryDirectory, before: [String: [UInt8]], after: [String: [UInt8]]
    ) throws -> DeltaBuilder.Result {
        for (path, bytes) in before { try dir.write("src/" + path, bytes) }
        let one = try SamplePack.build(in: dir, name: "v1.pack")
        try FileManager.default.removeItem(atPath: dir.at("src"))
        for (path, bytes) in after { try dir.write("src/" + path, bytes) }
        let two = try SamplePack.build(in: dir, name: "v2.pack")
        let (v1, v2) = (try PackReader(path: one), try PackReader(path: two))
        let result = try DeltaBuilder().build(base: v1, target: v2)
        let d = ZstdDecompressor()
        var oldChunks: [SHA256Digest: [UInt8]] = [:]
        for c in v1.index.chunks.indices { oldChunks[v1.index.chunks[c].id] = try v1.readChunk(c, using: d) }
        for e in result.entries {
            let plain = try result.bytes.withUnsafeBytes {
                try PackDelta.apply(
                    e, frame: UnsafeRawBufferPointer(rebasing: $0[Int(e.offset)..<Int(e.offset) + Int(e.length)]),
                    prefix: e.bases.flatMap { oldChunks[$0]! }, using: d, source: "t")
            }
            #expect(plain.count == e.outputSize)
        }
        return result
    }

    /// What the edits of issue #28 found fetched whole: a file renamed or moved, a file whose zero
    /// runs failed its first tries, a chunk whose bytes an earlier insertion moved far. Each now
    /// gets a delta, and the whole costs a small part of the chunks it replaces.
    @Test(arguments: [UInt64(2801), 2802]) func renamedSparseAndShiftedFilesGetDeltas(seed: UInt64) throws {
        print("renamedSparseAndShiftedFilesGetDeltas seed \(seed)")
        var g = SeededGenerator(seed: seed)
        let dir = try TemporaryDirectory("delta-kinds")
        defer { dir.remove() }
        func edited(_ bytes: [UInt8], at: Int, _ count: Int) -> [UInt8] {
            var b = bytes
            b.replaceSubrange(at..<at + count, with: g.bytes(count))
            return b
        }

        // Renamed and moved to another folder, with one small edit.
        let media = g.bytes(300_000)
        var result = try Self.delta(
            dir, before: ["media/a.bin": media], after: ["moved/b.bin": edited(media, at: 150_000, 100)])
        #expect(
            result.missingChunks > 0 && result.rebuiltChunks == result.missingChunks,
            "\(result.rebuiltChunks) of \(result.missingChunks)")
        #expect(
            UInt64(result.bytes.count) * 20 < result.missingBytes, "\(result.bytes.count) of \(result.missingBytes)")

        // A small file (one chunk) renamed to another name in another folder and edited: found
        // among the files the new version no longer has, by its bytes.
        let note = g.text(9_000)
        let kept = g.text(3_000)
        result = try Self.delta(
            dir, before: ["notes/todo.txt": note, "keep.txt": kept],
            after: ["archive/done-list.md": edited(note, at: 4_000, 30), "keep.txt": kept])
        #expect(
            result.missingChunks > 0 && result.rebuiltChunks == result.missingChunks,
            "the renamed and edited file's \(result.missingChunks) chunks: \(result.rebuiltChunks) rebuilt")

        // Zeros, then random bytes: edits in the zeros, an insertion in the random half.
        let sparse = [UInt8](repeating: 0, count: 600_000) + g.bytes(300_000)
        var after = sparse
        for at in [50_000, 200_000, 350_000, 500_000] { after.replaceSubrange(at..<at + 40, with: g.bytes(40)) }
        after.insert(contentsOf: g.bytes(60), at: 750_000)
        result = try Self.delta(dir, before: ["s.bin": sparse], after: ["s.bin": after])
        // Chunks left whole are the mostly-zero ones, whose frames are too small for any delta to
        // save its table entry; every chunk of random bytes has one.
        let whole = result.missingChunks - result.rebuiltChunks
        let wholeBytes = result.missingBytes - result.replacedBytes
        #expect(wholeBytes <= UInt64(whole) * 4096, "\(whole) chunks left whole, \(wholeBytes) bytes")
        #expect(
            UInt64(result.bytes.count) + wholeBytes < 12_000,
            "\(result.bytes.count) bytes of delta and \(wholeBytes) of whole chunks for 220 changed bytes")

        // 32 KiB inserted early (new bytes to anyone), then 100 bytes edited 700 KB further on.
        let random = g.bytes(1_000_000)
        var shifted = random
        shifted.insert(contentsOf: g.bytes(32_768), at: 100_000)
        shifted = edited(shifted, at: 832_768, 100)
        result = try Self.delta(dir, before: ["r.bin": random], after: ["r.bin": shifted])
        #expect(result.bytes.count < 32_768 + 8_192, "\(result.bytes.count) bytes for 32 KiB of new bytes and one edit")

        // A block of 40 KiB moved 400 KB further in a file of random bytes: no new byte at all.
        let moving = g.bytes(600_000)
        var moved = moving
        let block = Array(moved[100_000..<140_960])
        moved.removeSubrange(100_000..<140_960)
        moved.insert(contentsOf: block, at: 460_000)
        result = try Self.delta(dir, before: ["m.bin": moving], after: ["m.bin": moved])
        #expect(
            result.rebuiltChunks == result.missingChunks, "\(result.rebuiltChunks) of \(result.missingChunks)")
        #expect(result.bytes.count < 4_096, "\(result.bytes.count) bytes for a block moved")
    }

    @Test func aChangedDeltaOrAWrongBaseIsCaughtByTheTargetHash() throws {
        let dir = try TemporaryDirectory("delta-bad")
        defer { dir.remove() }
        let (v1, v2) = try Self.versions(dir, seed: 1511)
        let result = try DeltaBuilder().build(base: v1, target: v2)
        let d = ZstdDecompressor()
        let e = try #require(result.entries.first)
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
        var targets = e.targets
        targets[targets.count - 1] = .init(id: targets[targets.count - 1].id, size: targets[targets.count - 1].size - 1)
        let small = PackDelta.Entry(targets: targets, offset: e.offset, length: e.length, bases: e.bases)
        #expect(throws: BacklotError.self) {
            try good.withUnsafeBytes { try PackDelta.apply(small, frame: $0, prefix: base, using: d, source: "t") }
        }
    }

    /// Version 3's early entries are trusted only with the index they complete: a changed frame, a
    /// wrong base, frames cut short, an index delta that keeps an early chunk's ID, and early
    /// entries past the limits are each refused.
    @Test func earlyEntriesAreCheckedWithTheIndexTheyComplete() throws {
        let dir = try TemporaryDirectory("delta-early")
        defer { dir.remove() }
        let (v1, v2) = try Self.versions(dir, seed: 1516)
        let result = try DeltaBuilder().build(base: v1, target: v2)
        let delta = result.delta
        try #require(delta.earlyCount >= 1)
        let d = ZstdDecompressor()
        let frames = Array(result.bytes[Int(delta.earlyRange.lowerBound)..<Int(delta.earlyRange.upperBound)])
        let baseIndex = try v1.indexBytes()
        let rebuild = { (delta: PackDelta, frames: [UInt8], damageBase: Bool) throws in
            _ = try delta.rebuildIndex(
                from: baseIndex, expected: v2.packDigest, earlyFrames: frames, base: v1.index,
                baseChunk: {
                    var bytes = try v1.readChunk($0, using: d)
                    if damageBase { bytes[bytes.count / 2] ^= 1 }
                    return bytes
                }, using: d, source: "t")
        }
        try rebuild(delta, frames, false)
        var changed = frames
        changed[changed.count / 2] ^= 0x20
        #expect(throws: BacklotError.self) { try rebuild(delta, changed, false) }
        let damaged = #expect(throws: BacklotError.self) { try rebuild(delta, frames, true) }
        #expect(damaged?.message.contains("does not have its SHA-256") == true, "\(String(describing: damaged))")
        #expect(throws: BacklotError.self) { try rebuild(delta, Array(frames.dropLast()), false) }
        // An index delta with every ID in it: the early chunks' records are not left out.
        let whole = try ZstdCompressor(level: 9).compress(
            try #require(PackIndex.deltaForm(try v2.indexBytes())), prefix: try #require(PackIndex.deltaForm(baseIndex))
        )
        let keeping = PackDelta(
            base: delta.base, target: delta.target, indexDelta: whole, targetIndexLength: delta.targetIndexLength,
            slots: delta.slots, earlyCount: delta.earlyCount)
        let kept = #expect(throws: BacklotError.self) { try rebuild(keeping, frames, false) }
        #expect(kept?.message.contains("not left out") == true, "\(String(describing: kept))")
        // An early target outside the index, a base listed twice: refused by name.
        let slot0 = delta.slots[0]
        let crafted: [(PackDelta.Slot, String)] = [
            (PackDelta.Slot(targets: [1 << 30], bases: slot0.bases, length: slot0.length), "names target chunk"),
            (
                PackDelta.Slot(
                    targets: slot0.targets, bases: slot0.bases + slot0.bases.prefix(1), length: slot0.length),
                "lists a base twice"
            ),
        ]
        for (slot, phrase) in crafted {
            let bad = PackDelta(
                base: delta.base, target: delta.target, indexDelta: delta.indexDelta,
                targetIndexLength: delta.targetIndexLength, slots: [slot] + delta.slots.dropFirst(),
                earlyCount: delta.earlyCount)
            let e = #expect(throws: BacklotError.self) { try rebuild(bad, frames, false) }
            #expect(e?.message.contains(phrase) == true, "\(String(describing: e))")
        }
        // Limits read from the prefix: more early entries than entries, early entries without an
        // index delta, early frames of more than 1 MiB.
        let decode = { (delta: PackDelta) throws in
            let size = delta.prefixLength + delta.slots.reduce(0) { $0 + UInt64($1.length) }
            _ = try PackDelta.decodePrefix(
                delta.encodedPrefix, base: delta.base, target: delta.target, fileSize: size, source: "t")
        }
        try decode(delta)
        let slot = delta.slots[0]
        let variants = [
            PackDelta(
                base: delta.base, target: delta.target, indexDelta: delta.indexDelta,
                targetIndexLength: delta.targetIndexLength, slots: delta.slots, earlyCount: delta.slots.count + 1),
            PackDelta(
                base: delta.base, target: delta.target, indexDelta: [], targetIndexLength: delta.targetIndexLength,
                slots: delta.slots, earlyCount: 1),
            PackDelta(
                base: delta.base, target: delta.target, indexDelta: delta.indexDelta,
                targetIndexLength: delta.targetIndexLength,
                slots: [
                    PackDelta.Slot(targets: slot.targets, bases: slot.bases, length: 600_000),
                    PackDelta.Slot(targets: [slot.targets[0] + 1], bases: slot.bases, length: 600_000),
                ], earlyCount: 2),
        ]
        for bad in variants { #expect(throws: BacklotError.self, "\(bad.earlyCount)") { try decode(bad) } }
    }

    /// Many small files, a few edited: the new version's dictionary differs, and the index delta
    /// refers to the base chunks it was trained from (version 3's index bases), which costs far
    /// less than the dictionary against the old one; a damaged index base is refused.
    @Test func aNewDictionaryIsCompressedAgainstTheBaseContentItCameFrom() throws {
        let dir = try TemporaryDirectory("delta-dictionary")
        defer { dir.remove() }
        var g = SeededGenerator(seed: 1517)
        print("aNewDictionaryIsCompressedAgainstTheBaseContentItCameFrom seed: \(g.seed)")
        var files: [String: [UInt8]] = [:]
        for i in 0..<1_200 { files["t/\(i / 100)/f\(i).txt"] = g.text(400 + Int(g.next() % 3600)) }
        var edited = files
        for name in files.keys.sorted().prefix(120) {
            var bytes = edited[name]!
            let at = Int(g.next() % UInt64(bytes.count - 100))
            bytes.replaceSubrange(at..<at + 40, with: g.text(40))
            edited[name] = bytes
        }
        let result = try Self.delta(dir, before: files, after: edited)
        let (v1, v2) = (try PackReader(path: dir.at("v1.pack")), try PackReader(path: dir.at("v2.pack")))
        let (old, new) = (try #require(v1.index.dictionary), try #require(v2.index.dictionary))
        try #require(old.bytes != new.bytes, "the edits did not change the dictionary")
        let delta = result.delta
        #expect(!delta.indexBases.isEmpty)
        let d = ZstdDecompressor()
        let frames = Array(result.bytes[Int(delta.earlyRange.lowerBound)..<Int(delta.earlyRange.upperBound)])
        let rebuild = { (damage: Int?) throws -> [UInt8]? in
            try delta.rebuildIndex(
                from: try v1.indexBytes(), expected: v2.packDigest, earlyFrames: frames, base: v1.index,
                baseChunk: {
                    var bytes = try v1.readChunk($0, using: d)
                    if $0 == damage { bytes[0] ^= 1 }
                    return bytes
                }, using: d, source: "t")?.bytes
        }
        #expect(try rebuild(nil) == (try v2.indexBytes()))
        let damaged = #expect(throws: BacklotError.self) { try rebuild(delta.indexBases[0]) }
        #expect(damaged?.message.contains("does not have its SHA-256") == true, "\(String(describing: damaged))")
        let decoded = try PackDelta.decodePrefix(
            Array(result.bytes.prefix(Int(delta.prefixLength))), base: delta.base, target: delta.target,
            fileSize: UInt64(result.bytes.count), source: "t")
        #expect(decoded == delta)
        // An index base outside the base's chunks, or listed twice: refused before anything is read.
        for (bases, phrase) in [
            ([v1.index.chunks.count], "is not in the base's"), ([delta.indexBases[0], delta.indexBases[0]], "repeat"),
        ] {
            let crafted = PackDelta(
                base: delta.base, target: delta.target, indexDelta: delta.indexDelta,
                targetIndexLength: delta.targetIndexLength, slots: delta.slots, earlyCount: delta.earlyCount,
                indexBases: bases)
            let e = #expect(throws: BacklotError.self, "\(bases)") {
                try crafted.rebuildIndex(
                    from: try v1.indexBytes(), expected: v2.packDigest, earlyFrames: frames, base: v1.index,
                    baseChunk: { try v1.readChunk($0, using: d) }, using: d, source: "t")
            }
            #expect(e?.message.contains(phrase) == true, "\(String(describing: e))")
        }
        // Without the bases, the same index delta costs more: the new dictionary against the old.
        let early = delta.slots.prefix(delta.earlyCount).flatMap(\.targets)
        let form = try #require(PackIndex.deltaForm(try v2.indexBytes()))
        let baseForm = try #require(PackIndex.deltaForm(try v1.indexBytes()))
        let to = try #require(PackIndex.blankingIDs(form, of: early))
        let without = try ZstdCompressor(level: 9).compress(to, prefix: baseForm)
        print(
            "index delta: \(delta.indexDelta.count) bytes with \(delta.indexBases.count) bases, \(without.count) without"
        )
        #expect(delta.indexDelta.count < without.count)
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

    /// Small edits in many small files: their chunks share frames (one frame and one table entry
    /// for many chunks, each compressing against the others), and a frame never mixes two variants'
    /// files (a device reads only its own variant's frames).
    @Test func changedChunksShareFramesButNeverAcrossVariants() throws {
        let dir = try TemporaryDirectory("delta-groups")
        defer { dir.remove() }
        var g = SeededGenerator(seed: 2810)
        print("changedChunksShareFramesButNeverAcrossVariants seed 2810")
        var files: [String: [UInt8]] = [:]
        for i in 0..<12 {
            files["Levels/l\(i).txt"] = g.text(3_000)
            files["Textures/ASTC/t\(i).ktx"] = g.text(3_000)
            files["Textures/ETC2/t\(i).ktx"] = g.text(3_000)
        }
        let manifest = PackVariantTests().manifest(variants: PackVariantTests.variantsJSON)
        for (path, bytes) in files { try dir.write("src/" + path, bytes) }
        let one = try PackReader(path: try SamplePack.build(in: dir, manifestJSON: manifest, name: "v1.pack"))
        // In the paths' order: the seed alone decides every byte (a dictionary's order changes
        // from one process to the next).
        for path in files.keys.sorted() {
            var bytes = files[path] ?? []
            bytes.replaceSubrange(1_000..<1_020, with: g.text(20))
            try dir.write("src/" + path, bytes)
        }
        let two = try PackReader(path: try SamplePack.build(in: dir, manifestJSON: manifest, name: "v2.pack"))
        let result = try DeltaBuilder().build(base: one, target: two)
        // Each file is one chunk, and each changed (an edit drawn in another order than the paths'
        // once rewrote a file's 20 bytes with the same words: 35 chunks).
        #expect(result.missingChunks == 36, "\(result.missingChunks) missing chunks")
        #expect(result.rebuiltChunks == result.missingChunks, "\(result.rebuiltChunks) of \(result.missingChunks)")
        #expect(result.delta.frameCount < result.rebuiltChunks / 4, "\(result.delta.frameCount) frames")
        #expect(
            UInt64(result.bytes.count) * 5 < result.missingBytes, "\(result.bytes.count) of \(result.missingBytes)")
        var variantOf: [SHA256Digest: String] = [:]
        for file in two.index.files {
            let marker = try VariantMarker.find(in: file.path)
            for c in file.chunks {
                variantOf[two.index.chunks[c].id] = marker.map { $0.dimension.suffix + $0.value } ?? ""
            }
        }
        for e in result.entries {
            #expect(Set(e.targets.map { variantOf[$0.id] ?? "?" }).count == 1, "a frame mixes variants")
        }
        // Version 3: early frames and index bases only where every device has what they need —
        // targets of the shared files, bases (and index bases) of the base's shared files.
        var sharedBase = Set<SHA256Digest>()
        for file in one.index.files where try VariantMarker.find(in: file.path) == nil {
            for c in file.chunks { sharedBase.insert(one.index.chunks[c].id) }
        }
        #expect(result.delta.earlyCount >= 1, "the shared files' frames are early")
        for e in result.entries.prefix(result.delta.earlyCount) {
            #expect(e.targets.allSatisfy { variantOf[$0.id] == "" }, "an early frame of a variant's files")
            #expect(e.bases.allSatisfy(sharedBase.contains), "an early frame with a variant's base")
        }
        #expect(result.entries.dropFirst(result.delta.earlyCount).contains { variantOf[$0.targets[0].id] != "" })
        for b in result.delta.indexBases {
            #expect(sharedBase.contains(one.index.chunks[b].id), "an index base of a variant's files")
        }
    }

    /// Version 2 names chunks by number: a table that names a chunk outside an index, rebuilds a
    /// chunk twice, lists a base twice or declares a frame longer than zstd's bound for its output
    /// decodes (the prefix alone cannot tell) but does not resolve against the indexes.
    @Test func aVersionTwoTableThatDoesNotFitTheIndexesIsRefused() throws {
        let dir = try TemporaryDirectory("delta-slots")
        defer { dir.remove() }
        let (v1, v2) = try Self.versions(dir, seed: 1513)
        let honest = try DeltaBuilder().build(base: v1, target: v2).delta
        let slot = try #require(honest.slots.first)
        let resolve = { (slots: [PackDelta.Slot]) throws in
            let delta = PackDelta(
                base: honest.base, target: honest.target, indexDelta: honest.indexDelta,
                targetIndexLength: honest.targetIndexLength, slots: slots)
            let size = delta.prefixLength + slots.reduce(0) { $0 + UInt64($1.length) }
            let decoded = try PackDelta.decodePrefix(
                delta.encodedPrefix, base: delta.base, target: delta.target, fileSize: size, source: "t")
            #expect(decoded == delta)
            _ = try decoded.entries(base: v1.index, target: v2.index, source: "t")
        }
        try resolve(honest.slots)
        let wrong: [[PackDelta.Slot]] = [
            [PackDelta.Slot(targets: [v2.index.chunks.count], bases: slot.bases, length: slot.length)],
            [PackDelta.Slot(targets: slot.targets, bases: [v1.index.chunks.count], length: slot.length)],
            [slot, slot],
            [PackDelta.Slot(targets: slot.targets, bases: slot.bases + slot.bases.prefix(1), length: slot.length)],
            [PackDelta.Slot(targets: [slot.targets[0]], bases: slot.bases, length: 1 << 20)],
        ]
        for slots in wrong {
            #expect(throws: BacklotError.self, "\(slots)") { try resolve(slots) }
        }
    }

    /// The table's integers: one encoding per value, none above 2³² − 1.
    @Test func tableIntegersHaveOneEncoding() throws {
        for value: UInt32 in [0, 1, 127, 128, 16_383, 16_384, 1 << 28, .max] {
            var w = ByteWriter()
            w.varint(value)
            #expect(w.bytes.count == ByteWriter.varintSize(value))
            var r = ByteReader(w.bytes, base: 0, source: "t")
            #expect(try r.varint("v") == value && r.remaining == 0)
        }
        for bad: [UInt8] in [
            [0x80, 0x00], [0xFF, 0xFF, 0xFF, 0xFF, 0x1F], [0x80, 0x80, 0x80, 0x80, 0x80, 0x01], [0x80],
        ] {
            var r = ByteReader(bad, base: 0, source: "t")
            #expect(throws: BacklotError.self, "\(bad)") { try r.varint("v") }
        }
    }

    /// The index's delta form (version 2's index delta): undone, it gives the index back byte for
    /// byte, in both index versions; a chunk added early turns no later reference into new bytes.
    @Test(arguments: [false, true]) func theIndexDeltaFormRoundTrips(dictionary: Bool) throws {
        let dir = try TemporaryDirectory("delta-form")
        defer { dir.remove() }
        let (v1, v2) = try Self.versions(dir, seed: dictionary ? 1514 : 1515)
        for reader in [v1, v2] {
            let bytes = try reader.indexBytes()
            let form = try #require(PackIndex.deltaForm(bytes))
            #expect(form.count == bytes.count && form != bytes)
            #expect(PackIndex.deltaForm(form, undo: true) == bytes)
        }
        #expect(PackIndex.deltaForm(Array(try v1.indexBytes().dropLast())) == nil)
        #expect(PackIndex.deltaForm(Array("BKLTNOPE".utf8) + [UInt8](repeating: 0, count: 16)) == nil)
        // A version-1 index (no dictionary, 48-byte chunk records, sizes in file records).
        var g = SeededGenerator(seed: 1516)
        try dir.write("src/x.txt", g.text(40_000))
        let plain = try PackReader(path: try SamplePack.build(in: dir, name: "plain.pack", dictionary: false))
        let bytes = try plain.indexBytes()
        #expect(PackIndex.deltaForm(try #require(PackIndex.deltaForm(bytes)), undo: true) == bytes)
    }
}
