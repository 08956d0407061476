import BacklotBasics
import BacklotCatalog
import BacklotJSON
import BacklotRepository

/// Typed access to a request body's fields, with 400 errors naming them.
struct JSONBody {
    let root: JSONNode

    /// A required string.
    func string(_ key: String) throws -> String {
        guard let s = root[key]?.stringValue else {
            throw BacklotError(.invalidInput, "\"\(key)\" must be a string", context: "request body")
        }
        return s
    }

    /// An optional string: nil when absent or null.
    func optionalString(_ key: String) throws -> String? {
        guard let node = root[key] else { return nil }
        if case .null = node.kind { return nil }
        return try string(key)
    }

    /// An optional boolean: nil when absent or null.
    func bool(_ key: String) throws -> Bool? {
        guard let node = root[key] else { return nil }
        switch node.kind {
        case .null: return nil
        case .bool(let b): return b
        default: throw BacklotError(.invalidInput, "\"\(key)\" must be true or false", context: "request body")
        }
    }

    /// A required channel name.
    func channel(_ key: String) throws -> Channel {
        guard let channel = Channel(rawValue: try string(key)) else {
            throw BacklotError(
                .invalidInput, "\"\(key)\" must be internal, external or production", context: "request body")
        }
        return channel
    }

    /// A whole number within `range`, through ``CheckedInteger`` (never a trap). JSON Schema counts
    /// a number by its value, so `3621.0` (a fraction of zeros only) is the whole number 3621: it
    /// is read exactly from the text (``JSONDecimal``), never through a `Double`. An exponent is
    /// refused, as in paths and headers. A 400 names the field and the range for a missing value, a
    /// string, an exponent, a real fraction (`1.5`) or a value outside the range.
    func integer<T: FixedWidthInteger>(_ key: String, as type: T.Type, in range: ClosedRange<T>) throws -> T {
        let what = "\"\(key)\""
        let wanted = "a whole number in \(range.lowerBound)…\(range.upperBound)"
        let hint = "give \"\(key)\" as a JSON number without an exponent, such as 12 (or 12.0)"
        guard case .number(let text)? = root[key]?.kind, !text.contains(where: { $0 == "e" || $0 == "E" }),
            let decimal = JSONDecimal(text)
        else {
            throw BacklotError(.invalidInput, "\(what) must be \(wanted)", context: "request body", hint: hint)
        }
        guard decimal.isWhole else {
            throw BacklotError(
                .invalidInput, "\(what) is \(text.prefix(64)), which is not \(wanted)", context: "request body",
                hint: hint)
        }
        guard let digits = decimal.wholeDigits(atMost: 40), let value: T = CheckedInteger.parse(digits) else {
            throw BacklotError(
                .invalidInput, "\(what) is \(text.prefix(64)), outside \(range.lowerBound)…\(range.upperBound)",
                context: "request body", hint: "give \(wanted)")
        }
        return try CheckedInteger.convert(value, to: T.self, what, in: range, context: "request body")
    }

    /// An optional percentage, nil when absent or null: any JSON number from 0.01 to 100 (or 0 itself
    /// when `allowingZero`), as the schema says, compared as a `Double` as JSON Schema validators
    /// do. A rollout is kept in basis points (0.01 %), so the value is rounded DOWN to one, from its
    /// exact decimal text: `99.999` is 99.99 and never 100 (which would promote the candidate), and a
    /// value that is not 0 is never less than 0.01. The answer is a whole number of basis points / 100.
    func percent(_ key: String, allowingZero: Bool = false) throws -> Double? {
        guard let node = root[key] else { return nil }
        if case .null = node.kind { return nil }
        guard case .number(let text) = node.kind, let d = Double(text), d.isFinite, let decimal = JSONDecimal(text),
            (allowingZero && d == 0) || (d >= Self.lowestPercent && d <= 100)
        else {
            throw BacklotError(
                .invalidInput,
                "\"\(key)\" must be \(allowingZero ? "0, or " : "")a number from 0.01 to 100 (a rollout moves in steps of 0.01 %)",
                context: "request body",
                hint: "give a percentage such as 25 or 12.5; more than two decimals are rounded down to 0.01 %")
        }
        if d == 0 { return 0 }
        return Double(Self.basisPoints(decimal)) / 100
    }

    /// The lowest percentage above 0: one basis point.
    static let lowestPercent = 0.01

    /// ⌊percent × 100⌋ from the exact decimal, held to 1…10 000 (the caller checked that its `Double`
    /// is from 0.01 to 100; the exact value may lie a little outside, as `0.00999999999999999999`).
    static func basisPoints(_ percent: JSONDecimal) -> Int {
        guard let digits = percent.scaled(by: 2).floorDigits(atMost: 6), let bp = Int(digits) else { return 10_000 }
        return min(max(bp, 1), 10_000)
    }
}

/// A JSON number read exactly from its text (`-? int frac? exp?`, as ``JSONReader`` checked it):
/// `digits` × 10^`exponent`, without a `Double` (which would make `9007199254740993` even and
/// `0.29 × 100` less than 29). Every count is bounded: no arithmetic here can overflow.
struct JSONDecimal: Sendable, Equatable {
    var negative: Bool
    /// Significant digits, no leading or trailing zeros ("" for zero).
    var digits: String
    /// The power of ten `digits` is multiplied by (0 for zero): the written exponent, held to
    /// ±``exponentLimit``, less the fraction's digits (a body has at most 64 KiB of them).
    var exponent: Int

    /// A written exponent past this is read as this: 10^±10 000 000 is far outside every range here.
    static let exponentLimit = 10_000_000

    init?(_ text: String) {
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

    var isZero: Bool { digits.isEmpty }

    /// No digit after the decimal point but zeros.
    var isWhole: Bool { isZero || exponent >= 0 }

    /// This value × 10^`places`.
    func scaled(by places: Int) -> JSONDecimal {
        var d = self
        if !isZero { d.exponent += places }
        return d
    }

    /// The whole number, signed, in at most `limit` digits; nil when it is not whole or longer.
    func wholeDigits(atMost limit: Int) -> String? {
        guard isWhole else { return nil }
        guard !isZero else { return "0" }
        guard digits.count + exponent <= limit else { return nil }
        return (negative ? "-" : "") + digits + String(repeating: "0", count: exponent)
    }

    /// ⌊|value|⌋ in at most `limit` digits ("0" below 1); nil when longer.
    func floorDigits(atMost limit: Int) -> String? {
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
