/// Which chunks of a file's old version hold bytes a new chunk holds, wherever they are in the
/// file: for a block moved inside a file, or pages a database rewrote elsewhere, the chunks at the
/// same offset do not hold them, and a delta against those costs the whole chunk.
///
/// Each chunk is sampled at content-defined points: where a gear hash of the 64 bytes before a
/// position (``Chunker/gear``) has its high 8 bits zero, about one position in 256, the hash's
/// high half is a sample. Points depend on the bytes only, so a sample survives any shift. A new chunk's samples
/// vote for the old chunks that first held them.
///
/// ```swift
/// let index = ChunkResemblance(chunks: [(0, oldChunk0), (1, oldChunk1)])
/// index.similar(to: newChunk, atMost: 4)   // [1, 0]: the old chunks sharing the most samples first
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
    private var owners: [UInt64: Owners] = [:]

    init(chunks: [(index: Int, bytes: [UInt8])]) {
        // About one sample in 256 bytes: the table made once at its size, not grown by doubling
        // (each growth moved every entry into new, zeroed pages).
        owners.reserveCapacity(chunks.reduce(0) { $0 + $1.bytes.count } / 256)
        for (index, bytes) in chunks {
            // One lookup a sample, the owners changed in place.
            Self.samples(bytes) { owners[$0, default: Owners()].add(index) }
        }
    }

    /// Calls `body` with each sample of `bytes` (a sample repeated is given again).
    static func samples(_ bytes: [UInt8], _ body: (UInt64) -> Void) {
        var h: UInt64 = 0
        Chunker.gear.withUnsafeBufferPointer { gear in
            bytes.withUnsafeBufferPointer { bytes in
                for i in bytes.indices {
                    h = (h &<< 1) &+ gear[Int(bytes[i])]
                    // Bit k of the gear hash depends on the last k + 1 bytes: the high bits, on the last 64.
                    if i >= 63 && h & 0xFF00_0000_0000_0000 == 0 { body(h >> 32) }
                }
            }
        }
    }

    /// The old chunks that together hold the most of `bytes`' samples, at most `n`: the one holding
    /// the most, then the one holding the most of the rest, and so on while a chunk adds at least
    /// two samples and a sixteenth of them (a chunk that adds less would cost its table entry for
    /// nothing). Ties go to the earlier chunk. Empty when no old chunk shares a sample.
    func similar(to bytes: [UInt8], atMost n: Int) -> [Int] {
        var wanted: Set<UInt64> = []
        Self.samples(bytes) { wanted.insert($0) }
        let least = max(2, wanted.count / 16)
        var chosen: [Int] = []
        while chosen.count < n {
            var votes: [Int: Int] = [:]
            for sample in wanted {
                guard let held = owners[sample] else { continue }
                for owner in held { votes[owner, default: 0] += 1 }
            }
            guard let best = votes.max(by: { ($0.value, $1.key) < ($1.value, $0.key) }), best.value >= least else {
                break
            }
            chosen.append(best.key)
            wanted = wanted.filter { !(owners[$0]?.contains(best.key) ?? false) }
        }
        return chosen
    }
}
