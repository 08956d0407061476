import BacklotBasics
import BacklotCrypto

/// A delta file: what a client holding one version of a pack (the *base*) downloads instead of
/// whole chunks of another (the *target*) — `docs/format.md` §14.
///
/// It holds the target's index compressed against the base's index, and for changed chunks a
/// zstd frame compressed against the base chunks the client already holds (zstd's reference
/// prefix). Its *prefix* (header, index delta and entry table) is read with one Range request;
/// frames are then read by Range in runs. Nothing in it is trusted: the index it rebuilds must
/// have the catalog's SHA-256, base chunks are re-hashed before use, and every chunk it rebuilds
/// must have its target ID, or the client fetches the chunk whole.
///
/// ```swift
/// let prefix = try PackDelta.decodePrefix(bytes, base: old, target: new, fileSize: size, source: url)
/// for entry in prefix.entries { print(entry.target.short, entry.length) }
/// ```
public struct PackDelta: Sendable, Hashable {
    /// `BKLTDLTA`.
    public static let magic: [UInt8] = Array("BKLTDLTA".utf8)
    /// The fixed header's size.
    public static let headerSize = 96
    /// The only version this build reads and writes.
    public static let formatVersion: UInt16 = 1
    /// At most this many base chunks per entry.
    public static let maximumBases = 4
    /// The largest prefix (header, index delta and table) a reader accepts.
    public static let maximumPrefixLength: UInt64 = 96 << 20

    /// One chunk of the target rebuilt from base chunks.
    public struct Entry: Sendable, Hashable {
        /// The target chunk's ID (SHA-256 of its uncompressed bytes).
        public let target: SHA256Digest
        /// Where the frame lies in the delta file.
        public let offset: UInt64
        public let length: UInt32
        /// The target chunk's uncompressed size (the frame may not expand further).
        public let targetSize: UInt32
        /// The base chunks whose uncompressed bytes, concatenated in this order, are the frame's prefix.
        public let bases: [SHA256Digest]

        public init(target: SHA256Digest, offset: UInt64, length: UInt32, targetSize: UInt32, bases: [SHA256Digest]) {
            self.target = target
            self.offset = offset
            self.length = length
            self.targetSize = targetSize
            self.bases = bases
        }

        /// The frame's byte range in the delta file.
        public var range: Range<UInt64> { offset..<offset + UInt64(length) }
        /// The entry's size in the table.
        var encodedSize: Int { 52 + 32 * bases.count }
    }

    /// The pack digest of the version the client must hold.
    public let base: SHA256Digest
    /// The pack digest of the version the delta leads to.
    public let target: SHA256Digest
    /// The target's index compressed against the base's index (empty: none, read the index from the archive).
    public let indexDelta: [UInt8]
    /// The target's index length (what `indexDelta` must expand to).
    public let targetIndexLength: UInt32
    /// Sorted by offset; frames tile the file from ``prefixLength`` to its end.
    public let entries: [Entry]

    public init(
        base: SHA256Digest, target: SHA256Digest, indexDelta: [UInt8], targetIndexLength: UInt32, entries: [Entry]
    ) {
        self.base = base
        self.target = target
        self.indexDelta = indexDelta
        self.targetIndexLength = targetIndexLength
        self.entries = entries
    }

    /// The table's size in bytes.
    public var tableLength: UInt64 { entries.reduce(0) { $0 + UInt64($1.encodedSize) } }
    /// Header + index delta + table: where the first frame starts, and what a client reads first.
    public var prefixLength: UInt64 { UInt64(Self.headerSize) + UInt64(indexDelta.count) + tableLength }

    /// The prefix bytes (header, index delta, table); the frames follow them in the file.
    public var encodedPrefix: [UInt8] {
        var w = ByteWriter()
        w.append(Self.magic)
        w.u16(Self.formatVersion)
        w.u16(0)
        w.u32(UInt32(entries.count))
        w.digest(base)
        w.digest(target)
        w.u32(UInt32(indexDelta.count))
        w.u32(targetIndexLength)
        w.u64(tableLength)
        w.append(indexDelta)
        for e in entries {
            w.digest(e.target)
            w.u64(e.offset)
            w.u32(e.length)
            w.u32(e.targetSize)
            w.u16(UInt16(e.bases.count))
            w.u16(0)
            for b in e.bases { w.digest(b) }
        }
        return w.bytes
    }

    /// Decodes and checks a delta's prefix.
    /// - Parameters:
    ///   - base, target: the pack digests the caller expects (a delta for other versions is refused).
    ///   - fileSize: the delta file's size, from the catalog: frames must end exactly there.
    /// - Throws: ``BacklotError/Code/corruptArchive`` naming the rule broken.
    public static func decodePrefix(
        _ bytes: [UInt8], base: SHA256Digest, target: SHA256Digest, fileSize: UInt64, source: String
    ) throws -> PackDelta {
        var r = ByteReader(bytes, base: 0, source: source)
        let bad = { (message: String) in
            BacklotError(
                .corruptArchive, message, context: source,
                hint: "the delta is damaged: the full chunks are fetched instead")
        }
        guard Array(try r.take(8, "the magic")) == magic else { throw bad("not a Backlot delta (no BKLTDLTA)") }
        guard try r.u16("the version") == formatVersion else { throw bad("a delta of another format version") }
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
        guard count <= Int(tableLength) / 84 else { throw bad("the table is too short for \(count) entries") }
        let indexDelta = Array(try r.take(indexDeltaLength, "the index delta"))
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
            guard length >= 1, (1...UInt32(4 << 20)).contains(size),
                UInt64(length) <= UInt64(size) + UInt64(size) / 128 + 1024
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
}
