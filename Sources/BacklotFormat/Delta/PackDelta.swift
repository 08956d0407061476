import BacklotBasics
import BacklotCrypto

/// A delta file: what a client holding one version of a pack (the *base*) downloads instead of
/// whole chunks of another (the *target*) — `docs/format.md` §14.
///
/// It holds the target's index compressed against the base's index, and zstd frames that each
/// rebuild one or more changed chunks compressed against base chunks the client already holds
/// (zstd's reference prefix). Its *prefix* (header, index delta and table) is read with one Range
/// request; frames are then read by Range in runs. Nothing in it is trusted: the index it
/// rebuilds must have the catalog's SHA-256, base chunks are re-hashed before use, and every chunk
/// a frame rebuilds must have its target ID, or the client fetches the chunks whole.
///
/// Versions 2 and 3 name chunks by their number in the two indexes, so their table is resolved
/// against them (``entries(base:target:source:)``) once the client has both; version 1 (read
/// still) names them by ID. Version 3 (written by this build) adds *early* entries: the first
/// ``earlyCount`` frames, read with the prefix, whose chunks' IDs the index delta leaves out —
/// the client rebuilds those chunks and takes their IDs from their bytes before it checks the
/// index (``rebuildIndex(from:expected:earlyFrames:base:baseChunk:using:source:)``), so that a
/// small update does not pay 32 bytes a changed chunk.
///
/// ```swift
/// let prefix = try PackDelta.decodePrefix(bytes, base: old, target: new, fileSize: size, source: url)
/// for entry in try prefix.entries(base: oldIndex, target: newIndex, source: url) { print(entry.targets.count, entry.length) }
/// ```
public struct PackDelta: Sendable, Hashable {
    /// `BKLTDLTA`.
    public static let magic: [UInt8] = Array("BKLTDLTA".utf8)
    /// The fixed header's size.
    public static let headerSize = 96
    /// The version this build writes.
    public static let formatVersion: UInt16 = 3
    /// The versions this build reads.
    public static let readableVersions: ClosedRange<UInt16> = 1...3
    /// At most this many base chunks per entry of version 1.
    public static let maximumBases = 4
    /// At most this many base chunks per entry of version 2.
    public static let maximumEntryBases = 64
    /// The most bytes one frame may rebuild, and the most bytes of base chunks it may refer to.
    public static let maximumOutputBytes: UInt64 = 4 << 20
    public static let maximumBaseBytes: UInt64 = 16 << 20
    /// The largest prefix (header, index delta and table) a reader accepts.
    public static let maximumPrefixLength: UInt64 = 96 << 20
    /// Version 3's early entries, which a client rebuilds before it can check the index: at most
    /// this many bytes of frames, rebuilding at most ``maximumEarlyOutputBytes`` from at most
    /// ``maximumEarlyBaseBytes`` of base chunks in all.
    public static let maximumEarlyFrameBytes: UInt64 = 1 << 20
    public static let maximumEarlyOutputBytes: UInt64 = 4 << 20
    public static let maximumEarlyBaseBytes: UInt64 = 16 << 20
    /// Version 3: at most this many early entries.
    public static let maximumEarlyEntries = 4096
    /// Version 3's index bases: at most this many base chunks, of at most this many bytes in all.
    public static let maximumIndexBases = 4096
    public static let maximumIndexBaseBytes: UInt64 = 1 << 20

    /// One chunk a frame rebuilds.
    public struct Target: Sendable, Hashable {
        /// The chunk's ID (SHA-256 of its uncompressed bytes).
        public let id: SHA256Digest
        /// Its uncompressed size.
        public let size: UInt32

        public init(id: SHA256Digest, size: UInt32) {
            self.id = id
            self.size = size
        }
    }

    /// One frame of the delta: the target chunks it rebuilds, in order, and the base chunks whose
    /// bytes, concatenated in order, are its prefix.
    public struct Entry: Sendable, Hashable {
        public let targets: [Target]
        /// Where the frame lies in the delta file.
        public let offset: UInt64
        public let length: UInt32
        public let bases: [SHA256Digest]

        public init(targets: [Target], offset: UInt64, length: UInt32, bases: [SHA256Digest]) {
            self.targets = targets
            self.offset = offset
            self.length = length
            self.bases = bases
        }

        /// An entry of version 1: one target chunk.
        public init(target: SHA256Digest, offset: UInt64, length: UInt32, targetSize: UInt32, bases: [SHA256Digest]) {
            self.init(targets: [Target(id: target, size: targetSize)], offset: offset, length: length, bases: bases)
        }

        /// The frame's byte range in the delta file.
        public var range: Range<UInt64> { offset..<offset + UInt64(length) }
        /// What the frame expands to: its targets' sizes added up.
        public var outputSize: Int { targets.reduce(0) { $0 + Int($1.size) } }
        /// The entry's size in a version-1 table.
        var encodedSize: Int { 52 + 32 * bases.count }
    }

    /// One entry of a version-2 table as written: chunks by their number in the target's and the
    /// base's index; the frame's offset is where the previous entry's ends.
    public struct Slot: Sendable, Hashable {
        /// Target chunk numbers, ascending.
        public let targets: [Int]
        /// Base chunk numbers, in prefix order.
        public let bases: [Int]
        public let length: UInt32

        public init(targets: [Int], bases: [Int], length: UInt32) {
            self.targets = targets
            self.bases = bases
            self.length = length
        }

        /// A step between base numbers, which may go back: 0, −1, 1, −2, … as 0, 1, 2, 3, …
        static func zigzag(_ step: Int) -> UInt32 { UInt32(truncatingIfNeeded: step >= 0 ? 2 * step : -2 * step - 1) }
        static func unzigzag(_ value: UInt32) -> Int { value & 1 == 0 ? Int(value / 2) : -Int(value / 2) - 1 }

        /// Chunk numbers in any order, each written as its zigzag-coded step from the one before
        /// (the previous of the first is −1): an entry's bases, and version 3's index bases.
        static func writeSteps(_ numbers: [Int], into w: inout ByteWriter) {
            var previous = -1
            for n in numbers {
                w.varint(zigzag(n - previous - 1))
                previous = n
            }
        }

        /// The bytes ``writeSteps(_:into:)`` writes.
        static func stepsSize(_ numbers: [Int]) -> Int {
            var (size, previous) = (0, -1)
            for n in numbers {
                size += ByteWriter.varintSize(zigzag(n - previous - 1))
                previous = n
            }
            return size
        }

        /// Reads `count` numbers written by ``writeSteps(_:into:)``; `what(k)` names the k-th in errors.
        static func readSteps(
            _ r: inout ByteReader, count: Int, what: (Int) -> String, source: String
        ) throws -> [Int] {
            var numbers: [Int] = []
            var previous = -1
            for k in 0..<count {
                previous += 1 + unzigzag(try r.varint(what(k)))
                guard (0...Int(UInt32.max)).contains(previous) else {
                    throw PackDelta.refusal("\(what(k)) is out of range", source)
                }
                numbers.append(previous)
            }
            return numbers
        }

        /// Its bytes in the table.
        func encode(into w: inout ByteWriter) {
            w.varint(UInt32(targets.count))
            var previous = -1
            for t in targets {
                w.varint(UInt32(t - previous - 1))
                previous = t
            }
            w.varint(UInt32(bases.count))
            Self.writeSteps(bases, into: &w)
            w.varint(length)
        }

        /// Its size in the table.
        var encodedSize: Int {
            var size = ByteWriter.varintSize(UInt32(targets.count)) + ByteWriter.varintSize(UInt32(bases.count))
            var previous = -1
            for t in targets {
                size += ByteWriter.varintSize(UInt32(t - previous - 1))
                previous = t
            }
            return size + Self.stepsSize(bases) + ByteWriter.varintSize(length)
        }
    }

    /// 1, 2 or 3.
    public let formatVersion: UInt16
    /// The pack digest of the version the client must hold.
    public let base: SHA256Digest
    /// The pack digest of the version the delta leads to.
    public let target: SHA256Digest
    /// The target's index compressed against the base's index (empty: none, read the index from the archive).
    public let indexDelta: [UInt8]
    /// The target's index length (what `indexDelta` must expand to).
    public let targetIndexLength: UInt32
    /// Version 1's table, sorted by offset (empty in version 2).
    let v1Entries: [Entry]
    /// Version 2's and 3's table (empty in version 1): in version 3 the early entries first.
    public let slots: [Slot]
    /// Version 3: how many entries, from the first, are early (their targets' IDs are not in the
    /// index delta, their frames are read with the prefix); 0 in versions 1 and 2.
    public let earlyCount: Int
    /// Version 3: base chunks (numbers in the base's index) whose bytes, concatenated in this
    /// order, come before the base index's delta form in the index delta's reference prefix — the
    /// base content a new zstd dictionary was trained from; empty in versions 1 and 2.
    public let indexBases: [Int]

    /// A version-1 delta.
    public init(
        base: SHA256Digest, target: SHA256Digest, indexDelta: [UInt8], targetIndexLength: UInt32, entries: [Entry]
    ) {
        self.init(1, base, target, indexDelta, targetIndexLength, entries, [], early: 0, indexBases: [])
    }

    /// A version-2 delta.
    public init(
        base: SHA256Digest, target: SHA256Digest, indexDelta: [UInt8], targetIndexLength: UInt32, slots: [Slot]
    ) {
        self.init(2, base, target, indexDelta, targetIndexLength, [], slots, early: 0, indexBases: [])
    }

    /// A version-3 delta: the first `earlyCount` of `slots` are early (their targets' IDs are
    /// zero in the index delta's form, ``PackIndex/blankingIDs(_:of:)``), and the index delta's
    /// prefix starts with `indexBases`' bytes.
    public init(
        base: SHA256Digest, target: SHA256Digest, indexDelta: [UInt8], targetIndexLength: UInt32, slots: [Slot],
        earlyCount: Int, indexBases: [Int] = []
    ) {
        self.init(
            3, base, target, indexDelta, targetIndexLength, [], slots, early: earlyCount, indexBases: indexBases)
    }

    private init(
        _ version: UInt16, _ base: SHA256Digest, _ target: SHA256Digest, _ indexDelta: [UInt8],
        _ targetIndexLength: UInt32, _ v1Entries: [Entry], _ slots: [Slot], early: Int, indexBases: [Int]
    ) {
        (formatVersion, self.base, self.target) = (version, base, target)
        (self.indexDelta, self.targetIndexLength) = (indexDelta, targetIndexLength)
        (self.v1Entries, self.slots, self.earlyCount, self.indexBases) = (v1Entries, slots, early, indexBases)
    }

    /// How many frames the delta holds.
    public var frameCount: Int { formatVersion == 1 ? v1Entries.count : slots.count }

    /// How many chunks its frames rebuild.
    public var rebuiltChunkCount: Int {
        formatVersion == 1 ? v1Entries.count : slots.reduce(0) { $0 + $1.targets.count }
    }

    /// Where each frame lies in the file, in table order (known without the indexes).
    public var frameRanges: [Range<UInt64>] {
        if formatVersion == 1 { return v1Entries.map(\.range) }
        var offset = prefixLength
        return slots.map { slot in
            defer { offset += UInt64(slot.length) }
            return offset..<offset + UInt64(slot.length)
        }
    }

    /// Version 3: where the early entries' frames lie, right after the prefix.
    public var earlyRange: Range<UInt64> {
        prefixLength..<prefixLength + slots.prefix(max(0, earlyCount)).reduce(0) { $0 + UInt64($1.length) }
    }

    /// The table's bytes.
    var encodedTable: [UInt8] {
        var w = ByteWriter()
        if formatVersion == 3 {
            w.varint(UInt32(clamping: earlyCount))
            w.varint(UInt32(indexBases.count))
            Slot.writeSteps(indexBases, into: &w)
        }
        if formatVersion == 1 {
            for e in v1Entries {
                w.digest(e.targets[0].id)
                w.u64(e.offset)
                w.u32(e.length)
                w.u32(e.targets[0].size)
                w.u16(UInt16(e.bases.count))
                w.u16(0)
                for b in e.bases { w.digest(b) }
            }
        } else {
            for s in slots { s.encode(into: &w) }
        }
        return w.bytes
    }

    /// The table's size in bytes.
    public var tableLength: UInt64 {
        if formatVersion == 1 { return v1Entries.reduce(0) { $0 + UInt64($1.encodedSize) } }
        let head =
            formatVersion == 3
            ? ByteWriter.varintSize(UInt32(clamping: earlyCount)) + ByteWriter.varintSize(UInt32(indexBases.count))
                + Slot.stepsSize(indexBases) : 0
        return slots.reduce(UInt64(head)) { $0 + UInt64($1.encodedSize) }
    }
    /// Header + index delta + table: where the first frame starts, and what a client reads first.
    public var prefixLength: UInt64 { UInt64(Self.headerSize) + UInt64(indexDelta.count) + tableLength }

    /// The prefix bytes (header, index delta, table); the frames follow them in the file.
    public var encodedPrefix: [UInt8] {
        let table = encodedTable
        var w = ByteWriter()
        w.append(Self.magic)
        w.u16(formatVersion)
        w.u16(0)
        w.u32(UInt32(frameCount))
        w.digest(base)
        w.digest(target)
        w.u32(UInt32(indexDelta.count))
        w.u32(targetIndexLength)
        w.u64(UInt64(table.count))
        w.append(indexDelta)
        w.append(table)
        return w.bytes
    }

    /// The bound on a frame that expands to `size` bytes (zstd's, with room for its headers).
    static func frameBound(_ size: UInt64) -> UInt64 { size + size / 128 + 1024 }

    static func refusal(_ message: String, _ source: String) -> BacklotError {
        BacklotError(
            .corruptArchive, message, context: source, hint: "the delta is damaged: the full chunks are fetched instead"
        )
    }

    /// Decodes and checks a delta's prefix (version 1, 2 or 3).
    /// - Parameters:
    ///   - base, target: the pack digests the caller expects (a delta for other versions is refused).
    ///   - fileSize: the delta file's size, from the catalog: frames must end exactly there.
    /// - Throws: ``BacklotError/Code/corruptArchive`` naming the rule broken.
    public static func decodePrefix(
        _ bytes: [UInt8], base: SHA256Digest, target: SHA256Digest, fileSize: UInt64, source: String
    ) throws -> PackDelta {
        var r = ByteReader(bytes, base: 0, source: source)
        let bad = { (message: String) in refusal(message, source) }
        guard Array(try r.take(8, "the magic")) == magic else { throw bad("not a Backlot delta (no BKLTDLTA)") }
        let version = try r.u16("the version")
        guard readableVersions.contains(version) else {
            throw bad("a delta of format version \(version) (1, 2 or 3)")
        }
        guard try r.u16("reserved") == 0 else { throw bad("reserved bytes are not zero") }
        let count = Int(try r.u32("the entry count"))
        guard try r.digest("the base digest") == base else { throw bad("the delta is not from the version held") }
        guard try r.digest("the target digest") == target else { throw bad("the delta does not lead to this version") }
        let indexDeltaLength = Int(try r.u32("the index delta's length"))
        let targetIndexLength = try r.u32("the target index's length")
        let tableLength = try r.u64("the table's length")
        guard UInt64(indexDeltaLength) <= PackHeader.maximumIndexLength,
            UInt64(targetIndexLength) <= PackHeader.maximumIndexLength,
            tableLength <= PackHeader.maximumIndexLength
        else { throw bad("the index delta or the table is larger than 64 MiB") }
        let prefixLength = UInt64(headerSize) + UInt64(indexDeltaLength) + tableLength
        guard prefixLength == UInt64(bytes.count), prefixLength <= fileSize else {
            throw bad("the prefix is \(bytes.count) bytes, but the header says \(prefixLength)")
        }
        // The smallest entry: 84 bytes in version 1, 4 in versions 2 and 3.
        guard count <= Int(tableLength) / (version == 1 ? 84 : 4) else {
            throw bad("the table is too short for \(count) entries")
        }
        let indexDelta = Array(try r.take(indexDeltaLength, "the index delta"))
        if version == 2 {
            let slots = try decodeSlots(&r, count: count, framesFrom: prefixLength, fileSize: fileSize, source: source)
            return PackDelta(
                base: base, target: target, indexDelta: indexDelta, targetIndexLength: targetIndexLength, slots: slots)
        }
        if version == 3 {
            let early = Int(try r.varint("the early entry count"))
            guard early <= count, early <= maximumEarlyEntries else {
                throw bad("\(early) early entries of \(count) (at most \(maximumEarlyEntries))")
            }
            let baseCount = Int(try r.varint("the index base count"))
            guard baseCount <= maximumIndexBases, baseCount <= r.remaining else {
                throw bad("\(baseCount) index bases (at most \(maximumIndexBases))")
            }
            let indexBases = try Slot.readSteps(&r, count: baseCount, what: { "index base \($0)" }, source: source)
            guard (early == 0 && baseCount == 0) || !indexDelta.isEmpty else {
                throw bad("early entries or index bases without an index delta")
            }
            let slots = try decodeSlots(&r, count: count, framesFrom: prefixLength, fileSize: fileSize, source: source)
            let earlyBytes = slots.prefix(early).reduce(UInt64(0)) { $0 + UInt64($1.length) }
            guard earlyBytes <= maximumEarlyFrameBytes else {
                throw bad("the early frames take \(earlyBytes) bytes (at most \(maximumEarlyFrameBytes))")
            }
            return PackDelta(
                base: base, target: target, indexDelta: indexDelta, targetIndexLength: targetIndexLength, slots: slots,
                earlyCount: early, indexBases: indexBases)
        }
        var entries: [Entry] = []
        entries.reserveCapacity(count)
        var next = prefixLength
        var seen = Set<SHA256Digest>()
        for i in 0..<count {
            let id = try r.digest("entry \(i)'s target")
            let offset = try r.u64("entry \(i)'s offset")
            let length = try r.u32("entry \(i)'s length")
            let size = try r.u32("entry \(i)'s target size")
            let bases = Int(try r.u16("entry \(i)'s base count"))
            guard try r.u16("entry \(i)'s reserved") == 0 else { throw bad("entry \(i): reserved bytes are not zero") }
            guard (1...maximumBases).contains(bases) else { throw bad("entry \(i) has \(bases) bases (1…4)") }
            var ids: [SHA256Digest] = []
            for b in 0..<bases { ids.append(try r.digest("entry \(i)'s base \(b)")) }
            guard offset == next else { throw bad("entry \(i)'s frame is not where the previous one ends") }
            guard length >= 1, (1...UInt32(maximumOutputBytes)).contains(size),
                UInt64(length) <= frameBound(UInt64(size))
            else { throw bad("entry \(i) has a length of \(length) or a target size of \(size) out of range") }
            guard seen.insert(id).inserted else { throw bad("entry \(i) rebuilds a chunk another entry rebuilds") }
            next = offset + UInt64(length)
            entries.append(Entry(target: id, offset: offset, length: length, targetSize: size, bases: ids))
        }
        guard r.remaining == 0 else { throw bad("the table has \(r.remaining) bytes more than its entries") }
        guard next == fileSize else { throw bad("the frames end at \(next), but the file is \(fileSize) bytes") }
        return PackDelta(
            base: base, target: target, indexDelta: indexDelta, targetIndexLength: targetIndexLength,
            entries: entries)
    }

    /// Version 2's and 3's table: what can be checked without the indexes (counts, order, lengths, the
    /// frames tiling the rest of the file).
    static func decodeSlots(
        _ r: inout ByteReader, count: Int, framesFrom prefixLength: UInt64, fileSize: UInt64, source: String
    ) throws -> [Slot] {
        let bad = { (message: String) in refusal(message, source) }
        var slots: [Slot] = []
        slots.reserveCapacity(count)
        var next = prefixLength
        for i in 0..<count {
            let targetCount = Int(try r.varint("entry \(i)'s target count"))
            // Each target takes a byte at least: a count larger than what is left is refused before
            // anything is allocated.
            guard targetCount >= 1, targetCount <= r.remaining else {
                throw bad("entry \(i) has \(targetCount) targets, with \(r.remaining) bytes left")
            }
            var targets: [Int] = []
            targets.reserveCapacity(targetCount)
            var previous = -1
            for t in 0..<targetCount {
                let step = Int(try r.varint("entry \(i)'s target \(t)"))
                guard previous + 1 + step <= Int(UInt32.max) else {
                    throw bad("entry \(i)'s target \(t) is out of range")
                }
                previous += 1 + step
                targets.append(previous)
            }
            let baseCount = Int(try r.varint("entry \(i)'s base count"))
            guard baseCount <= maximumEntryBases else {
                throw bad("entry \(i) has \(baseCount) bases (at most \(maximumEntryBases))")
            }
            let bases = try Slot.readSteps(&r, count: baseCount, what: { "entry \(i)'s base \($0)" }, source: source)
            let length = try r.varint("entry \(i)'s frame length")
            guard length >= 1, UInt64(length) <= frameBound(maximumOutputBytes) else {
                throw bad("entry \(i) has a frame length of \(length)")
            }
            next += UInt64(length)
            guard next <= fileSize else { throw bad("entry \(i)'s frame ends past the file's \(fileSize) bytes") }
            slots.append(Slot(targets: targets, bases: bases, length: length))
        }
        guard r.remaining == 0 else { throw bad("the table has \(r.remaining) bytes more than its entries") }
        guard next == fileSize else { throw bad("the frames end at \(next), but the file is \(fileSize) bytes") }
        return slots
    }

    /// The table's entries, chunks named by ID: version 1's as decoded; version 2's and 3's resolved
    /// against the base's and the target's whole indexes (before any variant selection) and checked.
    /// - Throws: ``BacklotError/Code/corruptArchive`` for a chunk number outside its index, a target
    ///   rebuilt by two entries, a base listed twice in an entry, a frame that would rebuild more
    ///   than 4 MiB or refer to more than 16 MiB of base chunks, or one longer than zstd's bound
    ///   for what it rebuilds.
    public func entries(base: PackIndex, target: PackIndex, source: String) throws -> [Entry] {
        guard formatVersion >= 2 else { return v1Entries }
        let bad = { (message: String) in Self.refusal(message, source) }
        var entries: [Entry] = []
        entries.reserveCapacity(slots.count)
        var seen = Set<Int>()
        var offset = prefixLength
        for (i, slot) in slots.enumerated() {
            var targets: [Target] = []
            var output: UInt64 = 0
            for t in slot.targets {
                guard t < target.chunks.count else {
                    throw bad("entry \(i) names target chunk \(t) of \(target.chunks.count)")
                }
                guard seen.insert(t).inserted else {
                    throw bad("entry \(i) rebuilds chunk \(t), which another entry rebuilds")
                }
                let chunk = target.chunks[t]
                output += UInt64(chunk.uncompressedSize)
                targets.append(Target(id: chunk.id, size: chunk.uncompressedSize))
            }
            var bases: [SHA256Digest] = []
            var prefix: UInt64 = 0
            for b in slot.bases {
                guard b < base.chunks.count else {
                    throw bad("entry \(i) names base chunk \(b) of \(base.chunks.count)")
                }
                let id = base.chunks[b].id
                guard !bases.contains(id) else { throw bad("entry \(i) lists base chunk \(b) twice") }
                prefix += UInt64(base.chunks[b].uncompressedSize)
                bases.append(id)
            }
            guard output <= Self.maximumOutputBytes, prefix <= Self.maximumBaseBytes else {
                throw bad(
                    "entry \(i) rebuilds \(output) bytes from \(prefix) bytes of base chunks (at most 4 MiB from 16 MiB)"
                )
            }
            guard UInt64(slot.length) <= Self.frameBound(output) else {
                throw bad("entry \(i)'s frame of \(slot.length) bytes is longer than zstd's bound for \(output)")
            }
            entries.append(Entry(targets: targets, offset: offset, length: slot.length, bases: bases))
            offset += UInt64(slot.length)
        }
        return entries
    }
}
