/// The form of an index that a delta's index delta is made in (`docs/format.md` §14, version 2).
///
/// Chunks are numbered in the order files first use them (§3, canonical order), so one chunk
/// added or removed early renumbers every chunk after it, and every file record after it holds
/// other 4-byte references: zstd, which finds repeated bytes and not numbers off by one, then pays
/// for each. In the delta form each reference is written relative to the next new chunk: a file
/// using the next chunk not yet used (the common case) writes 0; any other reference `r` writes
/// `r − next` (modulo 2³²). Nothing else changes: same length, same bytes elsewhere. Applied to
/// both indexes before compressing, and undone after decompressing, it makes an update's index
/// delta cost what changed and not what was renumbered.
///
/// ```swift
/// let form = try #require(PackIndex.deltaForm(indexBytes))
/// #expect(PackIndex.deltaForm(form, undo: true) == indexBytes)
/// ```
extension PackIndex {
    /// `bytes` (an index of version 1 or 2, §3 and §3.1) in the delta form, or back from it with
    /// `undo`; nil when the bytes do not walk as an index (the caller then makes or uses no index
    /// delta: the full index is read from the archive, and checked there as always).
    public static func deltaForm(_ bytes: [UInt8], undo: Bool = false) -> [UInt8]? {
        var out = bytes
        var at = 0
        func take(_ n: Int) -> Int? {
            guard n >= 0, n <= out.count - at else { return nil }
            defer { at += n }
            return at
        }
        func u16() -> Int? { take(2).map { Int(out[$0]) | Int(out[$0 + 1]) << 8 } }
        func u32() -> UInt32? {
            take(4).map {
                UInt32(out[$0]) | UInt32(out[$0 + 1]) << 8 | UInt32(out[$0 + 2]) << 16 | UInt32(out[$0 + 3]) << 24
            }
        }
        // Up to the file records: the chunk table's place says the version too (40-byte records: 2).
        guard let table = chunkRecords(of: bytes) else { return nil }
        let v2 = table.size == 40
        at = table.start + table.count * table.size
        guard let files = u32() else { return nil }
        var next: UInt32 = 0
        for _ in 0..<files {
            if v2 {
                guard u16() != nil, let suffix = u16(), take(suffix) != nil, take(2) != nil else { return nil }
            } else {
                guard let path = u16(), take(path + 4 + 8 + 32) != nil else { return nil }
            }
            guard let refs = u32(), Int(refs) <= (out.count - at) / 4 else { return nil }
            for _ in 0..<refs {
                let p = at
                guard let value = u32() else { return nil }
                let result: UInt32
                if undo {
                    result = value == 0 ? next : value &+ next
                } else {
                    result = value == next ? 0 : value &- next
                }
                let reference = undo ? result : value
                if reference == next { next &+= 1 }
                out[p] = UInt8(truncatingIfNeeded: result)
                out[p + 1] = UInt8(truncatingIfNeeded: result >> 8)
                out[p + 2] = UInt8(truncatingIfNeeded: result >> 16)
                out[p + 3] = UInt8(truncatingIfNeeded: result >> 24)
            }
            if v2 && refs >= 2 { guard take(32) != nil else { return nil } }
        }
        guard at == out.count else { return nil }
        return out
    }

    /// Where the chunk records of `bytes` (an index of version 1 or 2) lie: the first record's
    /// offset, the record size (48 or 40; each starts with the chunk's 32-byte ID and ends with its
    /// 4-byte `uncompressedSize`) and their count; nil when the bytes are too short for them.
    public static func chunkRecords(of bytes: [UInt8]) -> (start: Int, size: Int, count: Int)? {
        func u32(_ at: Int) -> Int? {
            guard at >= 0, at <= bytes.count - 4 else { return nil }
            return Int(bytes[at]) | Int(bytes[at + 1]) << 8 | Int(bytes[at + 2]) << 16 | Int(bytes[at + 3]) << 24
        }
        guard bytes.count >= 8 else { return nil }
        let v2: Bool
        switch Array(bytes[0..<8]) {
        case Array("BKLTINDX".utf8): v2 = false
        case Array("BKLTIDX2".utf8): v2 = true
        default: return nil
        }
        guard let metadata = u32(8) else { return nil }
        var at = 12 + metadata
        if v2 {
            guard let dictionary = u32(at) else { return nil }
            at += 4 + dictionary
        }
        let size = v2 ? 40 : 48
        guard let count = u32(at), count <= (bytes.count - at - 4) / size else { return nil }
        return (at + 4, size, count)
    }

    /// `bytes` with the IDs of `chunks` (numbers in its chunk table) set to 32 zero bytes: how a
    /// version-3 delta's index delta leaves out the IDs of the chunks its early frames rebuild
    /// (`docs/format.md` §14); nil when a number is outside the table.
    public static func blankingIDs(_ bytes: [UInt8], of chunks: some Sequence<Int>) -> [UInt8]? {
        guard let table = chunkRecords(of: bytes) else { return nil }
        var out = bytes
        for c in chunks {
            guard c >= 0, c < table.count else { return nil }
            let at = table.start + c * table.size
            for i in at..<at + 32 { out[i] = 0 }
        }
        return out
    }
}
