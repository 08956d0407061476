import BacklotCrypto

/// Which chunks of a file's old version hold bytes a new chunk holds, wherever they are in the
/// file: for a block moved inside a file, or pages a database rewrote elsewhere, the chunks at the
/// same offset do not hold them, and a delta against those costs the whole chunk.
///
/// Each chunk is sampled at content-defined points: where a gear hash of the 64 bytes before a
/// position (``Chunker/gear``) has its high 8 bits zero, about one position in 256, the hash's
/// high half is a sample. Points depend on the bytes only, so a sample survives any shift. A new chunk's samples
/// vote for the old chunks that first held them.
///
/// Chunks' samples are shared by the deltas into one version (``ChunkSampleCache``).
///
/// ```swift
/// let index = try ChunkResemblance(chunks: [(0, id0), (1, id1)], cache: ChunkSampleCache()) { [old0, old1][$0] }
/// index.similar(to: ChunkResemblance.indexSamples(new), size: new.count, atMost: 4).chunks   // [1, 0]: the old chunks sharing the most samples first
/// ```
struct ChunkResemblance {
    /// The chunks (indexes into the base's chunks) that hold a sample, the first four, kept inline:
    /// a sample is almost always held by one chunk, and an array per sample cost an allocation each
    /// (a fifth of a delta's building time).
    struct Owners: Sequence {
        private var slots: (Int32, Int32, Int32, Int32) = (-1, -1, -1, -1)
        private(set) var count = 0

        init() {}

        mutating func add(_ index: Int) {
            guard count < 4, !contains(index) else { return }
            let value = Int32(truncatingIfNeeded: index)
            switch count {
            case 0: slots.0 = value
            case 1: slots.1 = value
            case 2: slots.2 = value
            default: slots.3 = value
            }
            count += 1
        }

        subscript(i: Int) -> Int {
            switch i {
            case 0: Int(slots.0)
            case 1: Int(slots.1)
            case 2: Int(slots.2)
            default: Int(slots.3)
            }
        }

        struct Iterator: IteratorProtocol {
            let owners: Owners
            var position = 0

            mutating func next() -> Int? {
                guard position < owners.count else { return nil }
                defer { position += 1 }
                return owners[position]
            }
        }

        func makeIterator() -> Iterator { Iterator(owners: self) }

        func contains(_ index: Int) -> Bool { (0..<count).contains { self[$0] == index } }
    }

    /// A sample → the chunks that hold it.
    private var owners: SampleTable

    /// The most distinct samples a chunk keeps, per 64 bytes: four times what bytes of any kind
    /// give (one in 256). Bytes chosen to make a sample of every position (a gear hash can be
    /// steered a byte at a time) would otherwise cost a table entry per byte; such a chunk keeps
    /// its lowest samples, which are a fair part of them, and so does a new chunk compared with it.
    static let densest = 64

    /// The resemblance of the base's chunks `chunks` (each with its ID, in the file's order): each
    /// chunk's samples taken from `cache` when a build took them before, else from its bytes
    /// (`bytes(index)`, asked once a chunk and only for chunks not in the cache) and given to it.
    /// - Throws: what `bytes` throws.
    init(
        chunks: [(index: Int, id: SHA256Digest)], cache: ChunkSampleCache,
        bytes: (_ index: Int) throws -> [UInt8]
    ) throws {
        var samples: [SHA256Digest: [UInt32]] = [:]
        var later: [(index: Int, id: SHA256Digest)] = []
        for (index, id) in chunks where samples[id] == nil {
            switch cache.claim(id) {
            case .done(let known): samples[id] = known
            case .others: later.append((index, id))
            case .yours:
                do {
                    let taken = Self.indexSamples(try bytes(index))
                    cache.finish(id, samples: taken)
                    samples[id] = taken
                } catch {
                    cache.abandon(id)
                    throw error
                }
            }
        }
        // Chunks another build was sampling: its samples when it is done by now, else this
        // build's own (the same samples; waiting would leave this core idle).
        for (index, id) in later where samples[id] == nil {
            samples[id] = try cache.samples(of: id) ?? Self.indexSamples(bytes(index))
        }
        // The table made once at its size, never grown: at most the samples of each ID.
        owners = SampleTable(capacity: samples.values.reduce(0) { $0 + $1.count })
        for (index, id) in chunks {
            for sample in samples[id] ?? [] { owners.add(sample, owner: index) }
        }
    }

    /// Calls `body` with each sample of `bytes`, in order (a sample repeated is given again). A
    /// sample is the high half of the gear hash, whose top 8 bits are zero: below 2^24.
    static func samples(_ bytes: [UInt8], _ body: (UInt32) -> Void) {
        var h: UInt64 = 0
        Chunker.gear.withUnsafeBufferPointer { gear in
            bytes.withUnsafeBufferPointer { bytes in
                // Bit k of the gear hash depends on the last k + 1 bytes: the high bits, on the
                // last 64, so the first 63 positions are no points.
                let warm = min(63, bytes.count)
                for i in 0..<warm { h = (h &<< 1) &+ gear[Int(bytes[i])] }
                // Two bytes a step: the hash two bytes on is 4h + 2g1 + g2, one addition after h
                // (one byte a step chained two, h + h then + g), and the hash between is off that
                // chain. A fifth faster here.
                var i = warm
                while i + 1 < bytes.count {
                    let g1 = gear[Int(bytes[i])]
                    let g2 = gear[Int(bytes[i + 1])]
                    let between = (h &<< 1) &+ g1
                    h = (h &<< 2) &+ ((g1 &<< 1) &+ g2)
                    if min(between, h) < Self.pointBelow {
                        if between < Self.pointBelow { body(UInt32(truncatingIfNeeded: between >> 32)) }
                        if h < Self.pointBelow { body(UInt32(truncatingIfNeeded: h >> 32)) }
                    }
                    i += 2
                }
                if i < bytes.count {
                    h = (h &<< 1) &+ gear[Int(bytes[i])]
                    if h < Self.pointBelow { body(UInt32(truncatingIfNeeded: h >> 32)) }
                }
            }
        }
    }

    /// A position is a point where the gear hash is below this (its top 8 bits zero).
    static let pointBelow: UInt64 = 1 << 56

    /// The samples of `bytes` for the index: each once in a row (a run of one byte, such as
    /// zeros, repeats one sample at every position), and when there are more than one per
    /// ``densest`` bytes, the lowest that many, each once.
    static func indexSamples(_ bytes: [UInt8]) -> [UInt32] {
        var all: [UInt32] = []
        all.reserveCapacity(bytes.count / 128)
        samples(bytes) { if all.last != $0 { all.append($0) } }
        let most = mostSamples(size: bytes.count)
        return all.count > most ? Array(distinct(all).prefix(most)) : all
    }

    /// The most distinct samples a chunk of `size` bytes keeps (one per ``densest`` bytes).
    static func mostSamples(size: Int) -> Int { max(1, size / densest) }

    private static func distinct(_ samples: [UInt32]) -> [UInt32] {
        var sorted = samples
        sorted.sort()
        var distinct: [UInt32] = []
        distinct.reserveCapacity(sorted.count)
        for sample in sorted where distinct.last != sample { distinct.append(sample) }
        return distinct
    }

    /// What ``similar(to:size:atMost:)`` found.
    struct Match {
        /// The old chunks chosen, the one holding the most samples first.
        let chunks: [Int]
        /// Whether at least as many samples as a chunk must add to be chosen are held by none of
        /// them: an index of more old chunks could find more.
        let unfound: Bool
    }

    /// The old chunks that together hold the most of a new chunk's samples (its
    /// ``indexSamples(_:)``, of `size` bytes), at most `n`: the one holding the most, then the one
    /// holding the most of the rest, and so on while a chunk adds at least two samples and a
    /// sixteenth of them (a chunk that adds less would cost its table entry for nothing). Ties go
    /// to the earlier chunk. No chunk when no old chunk shares a sample.
    func similar(to samples: [UInt32], size: Int, atMost n: Int) -> Match {
        // Each sample once, the lowest when there are too many (as the index kept them).
        let wanted = Self.distinct(samples).prefix(Self.mostSamples(size: size))
        let least = max(2, wanted.count / 16)
        // Each sample's owners, looked up once; a sample no old chunk holds never votes.
        var held = wanted.compactMap { owners.owners(of: $0) }
        var covered = 0
        var chosen: [Int] = []
        var votes: [Int] = []
        while chosen.count < n {
            // One vote per sample for each chunk holding it, counted as runs of a sorted list.
            votes.removeAll(keepingCapacity: true)
            for o in held { votes.append(contentsOf: o) }
            votes.sort()
            var best = (owner: -1, count: 0)
            var i = 0
            while i < votes.count {
                var j = i + 1
                while j < votes.count && votes[j] == votes[i] { j += 1 }
                // Strictly more: a tie keeps the earlier (lower) chunk.
                if j - i > best.count { best = (votes[i], j - i) }
                i = j
            }
            guard best.count >= least else { break }
            chosen.append(best.owner)
            covered += best.count
            held.removeAll { $0.contains(best.owner) }
        }
        return Match(chunks: chosen, unfound: wanted.count - covered >= least)
    }
}
