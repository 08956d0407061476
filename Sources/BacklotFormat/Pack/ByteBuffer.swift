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

extension ByteWriter {
    /// An unsigned LEB128 integer: 7 bits a byte, low bits first, the high bit set on every byte
    /// but the last (1 byte below 128, 5 at most for a `UInt32`).
    mutating func varint(_ v: UInt32) {
        var v = v
        while v >= 0x80 {
            append(CollectionOfOne(UInt8(truncatingIfNeeded: v) | 0x80))
            v >>= 7
        }
        append(CollectionOfOne(UInt8(v)))
    }

    /// The size of ``varint(_:)``'s encoding of `v`.
    static func varintSize(_ v: UInt32) -> Int {
        v < 1 << 7 ? 1 : v < 1 << 14 ? 2 : v < 1 << 21 ? 3 : v < 1 << 28 ? 4 : 5
    }
}

extension ByteReader {
    /// Reads what ``ByteWriter/varint(_:)`` writes, refusing a value above `UInt32.max` and a
    /// longer encoding than needed (a trailing `0x00` byte), so that a value has one encoding.
    mutating func varint(_ what: @autoclosure () -> String) throws -> UInt32 {
        var value: UInt64 = 0
        for shift in stride(from: UInt64(0), through: 28, by: 7) {
            guard remaining >= 1 else { throw fail("the table ends while reading \(what())") }
            let byte = bytes[offset]
            offset += 1
            value |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 {
                guard byte != 0 || shift == 0 else { throw fail("\(what()) is not in its shortest encoding") }
                guard value <= UInt64(UInt32.max) else { throw fail("\(what()) is larger than 2³² − 1") }
                return UInt32(value)
            }
        }
        throw fail("\(what()) is longer than 5 bytes")
    }
}
