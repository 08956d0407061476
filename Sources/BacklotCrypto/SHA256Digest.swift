import BacklotBasics

/// A SHA-256 digest: 32 bytes, compared and hashed by value, printed as lowercase hex.
public struct SHA256Digest: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The digest as four big-endian 64-bit words (so that comparison follows byte order).
    private let words: (UInt64, UInt64, UInt64, UInt64)

    /// The number of bytes in a digest.
    public static let byteCount = 32

    /// Makes a digest from exactly 32 bytes.
    public init<C: Collection>(bytes: C) where C.Element == UInt8 {
        precondition(bytes.count == 32, "a SHA-256 digest has 32 bytes")
        // Contiguous bytes (arrays, slices, buffers: every caller in practice) are read as one
        // buffer; the generic walk is tens of times slower per byte (an index of many digests).
        if let fast = bytes.withContiguousStorageIfAvailable({ Self.words(of: UnsafeRawBufferPointer($0)) }) {
            words = fast
            return
        }
        var w: [UInt64] = [0, 0, 0, 0]
        for (i, b) in bytes.enumerated() { w[i / 8] = w[i / 8] << 8 | UInt64(b) }
        words = (w[0], w[1], w[2], w[3])
    }

    private static func words(of b: UnsafeRawBufferPointer) -> (UInt64, UInt64, UInt64, UInt64) {
        func word(_ at: Int) -> UInt64 { UInt64(bigEndian: b.loadUnaligned(fromByteOffset: at, as: UInt64.self)) }
        return (word(0), word(8), word(16), word(24))
    }

    /// Parses 64 hex digits; nil if `hex` is anything else.
    public init?(hex: String) {
        let utf8 = Array(hex.utf8)
        guard utf8.count == 64 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(32)
        var i = 0
        while i < 64 {
            guard let hi = Self.nibble(utf8[i]), let lo = Self.nibble(utf8[i + 1]) else { return nil }
            bytes.append(hi << 4 | lo)
            i += 2
        }
        self.init(bytes: bytes)
    }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// The 32 bytes.
    public var bytes: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(32)
        for word in [words.0, words.1, words.2, words.3] {
            for shift in stride(from: 56, through: 0, by: -8) {
                out.append(UInt8(truncatingIfNeeded: word >> UInt64(shift)))
            }
        }
        return out
    }

    /// Lowercase hex, 64 characters.
    public var hex: String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(64)
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 15)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    public var description: String { hex }

    /// The first 12 hex digits, for messages.
    public var short: String { String(hex.prefix(12)) }

    public static func == (a: Self, b: Self) -> Bool {
        a.words.0 == b.words.0 && a.words.1 == b.words.1 && a.words.2 == b.words.2 && a.words.3 == b.words.3
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(words.0)
        hasher.combine(words.1)
    }

    public static func < (a: Self, b: Self) -> Bool {
        (a.words.0, a.words.1, a.words.2, a.words.3) < (b.words.0, b.words.1, b.words.2, b.words.3)
    }
}
