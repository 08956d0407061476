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
        BacklotError(
            .corruptArchive, message, context: "\(source) at offset \(base + UInt64(offset))",
            hint: "the pack is damaged or was not made by Backlot: package or download it again")
    }

    // `what` is an autoclosure: it names the field only in a message, so an index of many records
    // builds no string per field read.
    mutating func take(_ n: Int, _ what: @autoclosure () -> String) throws -> ArraySlice<UInt8> {
        guard n >= 0, remaining >= n else {
            throw fail("the index ends while reading \(what()) (\(n) bytes needed, \(remaining) left)")
        }
        defer { offset += n }
        return bytes[offset..<offset + n]
    }

    mutating func u16(_ what: @autoclosure () -> String) throws -> UInt16 { try integer(what()) }
    mutating func u32(_ what: @autoclosure () -> String) throws -> UInt32 { try integer(what()) }
    mutating func u64(_ what: @autoclosure () -> String) throws -> UInt64 { try integer(what()) }

    private mutating func integer<T: FixedWidthInteger>(_ what: @autoclosure () -> String) throws -> T {
        let size = MemoryLayout<T>.size
        guard remaining >= size else {
            throw fail("the index ends while reading \(what()) (\(size) bytes needed, \(remaining) left)")
        }
        let at = offset
        offset += size
        return bytes.withUnsafeBytes { T(littleEndian: $0.loadUnaligned(fromByteOffset: at, as: T.self)) }
    }

    mutating func digest(_ what: @autoclosure () -> String) throws -> SHA256Digest {
        SHA256Digest(bytes: try take(32, what()))
    }
}
