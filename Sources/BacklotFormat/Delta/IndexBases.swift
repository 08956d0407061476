import BacklotZstd

/// The base chunks that a version's new zstd dictionary was trained from, for a version-3 delta's
/// index delta to refer to (``PackDelta/indexBases``, `docs/format.md` §14).
///
/// A version-2 pack's dictionary is trained on samples of its own small files, so a version whose
/// small files changed at all has a new dictionary: 33 KB that, compressed against the old one
/// only, cost 5–6 KB of an index delta — more than the chunks a small update changes. Its content
/// is made of pieces of those files, which the client mostly still holds: found in the base's
/// chunks, they make the same dictionary cost a few hundred bytes.
///
/// Pieces are found by content-defined samples: where the low 5 bits of a gear hash
/// (``Chunker/gear``) are zero, about one position in 32, its low 32 bits — which depend on the 32
/// bytes before — are a sample. Base chunks of at most 64 KiB that every device holds (of files of
/// no variant) are scanned (64 MiB of them at most),
/// and those holding the most of the dictionary's samples that no chunk chosen before holds are
/// chosen, two samples at least, within ``budget`` bytes.
///
/// ```swift
/// let bases = try IndexBases.choose(
///     dictionary: new.bytes, old: old.bytes, base: input, among: sharedChunks, using: ZstdDecompressor())
/// ```
enum IndexBases {
    /// The most bytes of base chunks chosen (the reader's bound is ``PackDelta/maximumIndexBaseBytes``).
    static let budget = 256 << 10
    /// The most bytes of base chunks scanned, and the largest chunk scanned.
    static let scanLimit = 64 << 20
    static let largestChunk: UInt32 = 64 << 10

    /// The chosen base chunks, by number, ascending; empty when the dictionary did not change.
    static func choose(
        dictionary: [UInt8], old: [UInt8]?, base: DeltaBuilder.Input, among shared: Set<Int>,
        using decompressor: ZstdDecompressor
    ) throws -> [Int] {
        guard !dictionary.isEmpty, dictionary != old else { return [] }
        var wanted = Set<UInt32>()
        samples(dictionary) { wanted.insert($0) }
        var candidates: [(chunk: Int, held: Set<UInt32>)] = []
        var scanned = 0
        for (c, chunk) in base.index.chunks.enumerated()
        where chunk.uncompressedSize <= largestChunk && shared.contains(c) {
            scanned += Int(chunk.uncompressedSize)
            guard scanned <= scanLimit else { break }
            var held = Set<UInt32>()
            samples(try base.chunk(c, using: decompressor)) { if wanted.contains($0) { held.insert($0) } }
            if held.count >= 2 { candidates.append((c, held)) }
        }
        candidates.sort { $0.held.count != $1.held.count ? $0.held.count > $1.held.count : $0.chunk < $1.chunk }
        var covered = Set<UInt32>()
        var chosen: [Int] = []
        var bytes = 0
        for candidate in candidates {
            let size = Int(base.index.chunks[candidate.chunk].uncompressedSize)
            guard chosen.count < PackDelta.maximumIndexBases else { break }
            guard bytes + size <= budget, candidate.held.subtracting(covered).count >= 2 else { continue }
            chosen.append(candidate.chunk)
            covered.formUnion(candidate.held)
            bytes += size
        }
        return chosen.sorted()
    }

    /// Calls `body` with each sample of `bytes`.
    static func samples(_ bytes: [UInt8], _ body: (UInt32) -> Void) {
        var h: UInt64 = 0
        Chunker.gear.withUnsafeBufferPointer { gear in
            for (i, byte) in bytes.enumerated() {
                h = (h &<< 1) &+ gear[Int(byte)]
                if i >= 31 && h & 0x1F == 0 { body(UInt32(truncatingIfNeeded: h)) }
            }
        }
    }
}
