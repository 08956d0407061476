import BacklotBasics
import BacklotCrypto

/// Appends little-endian integers and bytes.
struct ByteWriter {
    private(set) var bytes: [UInt8] = []

    mutating func u16(_ v: UInt16) { withUnsafeBytes(of: v.littleEndian) { bytes += $0 } }
    mutating func u32(_ v: UInt32) { withUnsafeBytes(of: v.littleEndian) { bytes += $0 } }
    mutating func u64(_ v: UInt64) { withUnsafeBytes(of: v.littleEndian) { bytes += $0 } }
    mutating func append<C: Collection>(_ b: C) where C.Element == UInt8 { bytes += b }
    mutating func digest(_ d: SHA256Digest) { bytes += d.bytes }
    mutating func reserve(_ n: Int) { bytes.reserveCapacity(n) }
}

/// Reads little-endian integers and bytes, failing with a message that names what was being read
/// and where, never reading past the end.
struct ByteReader {
    let bytes: [UInt8]
    var offset = 0
    /// Added to offsets in messages (where `bytes` starts in the file).
    let base: UInt64
    let source: String

    init(_ bytes: [UInt8], base: UInt64, source: String) {
        self.bytes = bytes
        self.base = base
        self.source = source
    }

    var remaining: Int { bytes.count - offset }

    func fail(_ message: String) -> BacklotError {
        BacklotError(.corruptArchive, message, context: "\(source) at offset \(base + UInt64(offset))",
                     hint: "the pack is damaged or was not made by Backlot: package or download it again")
    }

    mutating func take(_ n: Int, _ what: String) throws -> ArraySlice<UInt8> {
        guard n >= 0, remaining >= n else { throw fail("the index ends while reading \(what) (\(n) bytes needed, \(remaining) left)") }
        defer { offset += n }
        return bytes[offset..<offset + n]
    }

    mutating func u16(_ what: String) throws -> UInt16 { try integer(what) }
    mutating func u32(_ what: String) throws -> UInt32 { try integer(what) }
    mutating func u64(_ what: String) throws -> UInt64 { try integer(what) }

    private mutating func integer<T: FixedWidthInteger>(_ what: String) throws -> T {
        let slice = try take(MemoryLayout<T>.size, what)
        var v: T = 0
        for (i, b) in slice.enumerated() { v |= T(b) << (8 * i) }
        return v
    }

    mutating func digest(_ what: String) throws -> SHA256Digest { SHA256Digest(bytes: try take(32, what)) }
}
