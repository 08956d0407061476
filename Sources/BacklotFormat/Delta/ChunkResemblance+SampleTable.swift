extension ChunkResemblance {
    /// Samples → the old chunks holding them: a table of fixed size with open addressing, made
    /// for a known number of entries (a Swift dictionary hashed each sample with SipHash, and its
    /// inserts and lookups were a quarter of a delta's building time). A sample is already the
    /// high bits of a hash; it is spread over the table by one multiplication.
    ///
    /// ```swift
    /// var table = ChunkResemblance.SampleTable(capacity: 2)
    /// table.add(0x12_3456, owner: 7)
    /// table.owners(of: 0x12_3456)   // the owners [7]
    /// ```
    struct SampleTable {
        /// Each slot's sample plus one (0: empty; samples are below 2^24).
        private var keys: [UInt32]
        private var values: [Owners]
        private let shift: UInt64
        private let mask: Int

        /// A table for `capacity` entries, at most half full.
        init(capacity: Int) {
            var size = 16
            while size / 2 < capacity { size <<= 1 }
            keys = Array(repeating: 0, count: size)
            values = Array(repeating: Owners(), count: size)
            shift = UInt64(64 - size.trailingZeroBitCount)
            mask = size - 1
        }

        private func home(_ sample: UInt32) -> Int {
            Int(truncatingIfNeeded: (UInt64(sample) &* 0x9E37_79B9_7F4A_7C15) >> shift)
        }

        /// Records that the chunk `owner` holds `sample` (a fifth owner is not kept).
        mutating func add(_ sample: UInt32, owner: Int) {
            // Samples are the high half of a hash whose top 8 bits are zero, and the table is made
            // for at least as many entries as it is given: a slot is always free.
            assert(sample < 1 << 24, "a sample is below 2^24")
            let key = sample &+ 1
            var slot = home(sample)
            while keys[slot] != 0 && keys[slot] != key { slot = (slot + 1) & mask }
            keys[slot] = key
            values[slot].add(owner)
        }

        /// The chunks holding `sample`, nil when none does.
        func owners(of sample: UInt32) -> Owners? {
            let key = sample &+ 1
            var slot = home(sample)
            while keys[slot] != 0 {
                if keys[slot] == key { return values[slot] }
                slot = (slot + 1) & mask
            }
            return nil
        }
    }
}
