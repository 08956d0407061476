import BacklotCrypto

/// The chunks a build has stored so far, found by ID: the chunk table itself and an
/// open-addressing table of chunk numbers over it (4 bytes a slot, at most half full), instead
/// of a dictionary that holds every ID a second time (about 40 bytes an entry, in a table of a
/// power of two at most three quarters full: 200,000 chunks, 21 MB instead of 2).
///
/// Slots are placed by the IDs' `Hasher` value (seeded per process, so crafted content cannot
/// aim at one slot), and every hit is confirmed against the full ID in the chunk table.
///
/// ```swift
/// var stored = StoredChunks(expected: 1_000)
/// if stored.index(of: id) == nil { stored.append(chunk) }
/// ```
struct StoredChunks {
    /// The chunk table, in the order chunks were stored.
    private(set) var chunks: [PackIndex.Chunk] = []
    /// Chunk numbers, or -1 for an empty slot; the count is a power of two.
    private var slots: [Int32]

    init(expected: Int) {
        chunks.reserveCapacity(expected)
        var size = 16
        while size < 2 * expected { size <<= 1 }
        slots = [Int32](repeating: -1, count: size)
    }

    /// The number of the chunk with `id`, if it is stored.
    func index(of id: SHA256Digest) -> Int? {
        let mask = slots.count - 1
        var slot = id.hashValue & mask
        while true {
            let found = slots[slot]
            if found < 0 { return nil }
            if chunks[Int(found)].id == id { return Int(found) }
            slot = (slot + 1) & mask
        }
    }

    /// Stores `chunk`, whose ID must not be stored yet; returns its number.
    @discardableResult
    mutating func append(_ chunk: PackIndex.Chunk) -> Int {
        let number = chunks.count
        chunks.append(chunk)
        if 2 * chunks.count > slots.count {
            slots = [Int32](repeating: -1, count: slots.count * 2)
            for (i, c) in chunks.enumerated() { place(c.id, Int32(i)) }
        } else {
            place(chunk.id, Int32(number))
        }
        return number
    }

    private mutating func place(_ id: SHA256Digest, _ number: Int32) {
        let mask = slots.count - 1
        var slot = id.hashValue & mask
        while slots[slot] >= 0 { slot = (slot + 1) & mask }
        slots[slot] = number
    }

    /// Hands the chunk table over and empties this one.
    mutating func take() -> [PackIndex.Chunk] {
        slots = []
        defer { chunks = [] }
        return chunks
    }
}
