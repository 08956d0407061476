/// A JSON number read exactly from its text (`-? int frac? exp?`, as ``JSONReader`` checked it):
/// `digits` × 10^`exponent`, without a `Double` (which would make `9007199254740993` even and
/// `0.29 × 100` less than 29). Every count is bounded: no arithmetic here can overflow.
public struct JSONDecimal: Sendable, Equatable {
    public var negative: Bool
    /// Significant digits, no leading or trailing zeros ("" for zero).
    public var digits: String
    /// The power of ten `digits` is multiplied by (0 for zero): the written exponent, held to
    /// ±``exponentLimit``, less the fraction's digits (a body has at most 64 KiB of them).
    public var exponent: Int

    /// A written exponent past this is read as this: 10^±10 000 000 is far outside every range here.
    public static let exponentLimit = 10_000_000

    public init?(_ text: String) {
        let bytes = Array(text.utf8)
        var i = 0
        func isDigit(_ at: Int) -> Bool { at < bytes.count && bytes[at] >= 0x30 && bytes[at] <= 0x39 }
        func run() -> ArraySlice<UInt8> {
            let start = i
            while isDigit(i) { i += 1 }
            return bytes[start..<i]
        }
        negative = bytes.first == UInt8(ascii: "-")
        if negative { i += 1 }
        let whole = run()
        guard !whole.isEmpty else { return nil }
        var fraction: ArraySlice<UInt8> = []
        if i < bytes.count, bytes[i] == UInt8(ascii: ".") {
            i += 1
            fraction = run()
            guard !fraction.isEmpty else { return nil }
        }
        var power = 0
        if i < bytes.count, bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") {
            i += 1
            var minus = false
            if i < bytes.count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") {
                minus = bytes[i] == UInt8(ascii: "-")
                i += 1
            }
            let written = run()
            guard !written.isEmpty else { return nil }
            let significant = written.drop { $0 == UInt8(ascii: "0") }
            // At most 8 digits are read: a longer exponent is past the limit, whatever it says.
            let magnitude =
                significant.count > 8
                ? Self.exponentLimit
                : min(Int(String(decoding: significant, as: UTF8.self)) ?? 0, Self.exponentLimit)
            power = minus ? -magnitude : magnitude
        }
        guard i == bytes.count else { return nil }
        // A body is at most 64 KiB: the fraction's length is far from overflowing `power`.
        var all = Array(whole) + Array(fraction)
        power -= fraction.count
        while all.last == UInt8(ascii: "0") {
            all.removeLast()
            power += 1
        }
        let significant = all.drop { $0 == UInt8(ascii: "0") }
        digits = String(decoding: significant, as: UTF8.self)
        exponent = significant.isEmpty ? 0 : power
    }

    public var isZero: Bool { digits.isEmpty }

    /// No digit after the decimal point but zeros.
    public var isWhole: Bool { isZero || exponent >= 0 }

    /// This value × 10^`places`.
    public func scaled(by places: Int) -> JSONDecimal {
        var d = self
        if !isZero { d.exponent += places }
        return d
    }

    /// The whole number, signed, in at most `limit` digits; nil when it is not whole or longer.
    public func wholeDigits(atMost limit: Int) -> String? {
        guard isWhole else { return nil }
        guard !isZero else { return "0" }
        guard digits.count + exponent <= limit else { return nil }
        return (negative ? "-" : "") + digits + String(repeating: "0", count: exponent)
    }

    /// ⌊|value|⌋ in at most `limit` digits ("0" below 1); nil when longer.
    public func floorDigits(atMost limit: Int) -> String? {
        guard !isZero else { return "0" }
        if exponent >= 0 {
            guard digits.count + exponent <= limit else { return nil }
            return digits + String(repeating: "0", count: exponent)
        }
        let kept = digits.count + exponent  // exponent < 0: the digits before the point
        guard kept > 0 else { return "0" }
        guard kept <= limit else { return nil }
        return String(digits.prefix(kept))
    }
}
