/// The one rule for numbers that come from outside the process (JSON bodies, headers, query
/// strings, catalogs, key lists, pack indexes, configuration files, property lists, command-line
/// options): they are converted and combined only through these checked operations, which throw a
/// ``BacklotError`` naming the value instead of trapping.
///
/// A trap on a conversion (`Int(someUInt64)`) or on arithmetic (`a + b`) is a crash an attacker
/// can trigger with one request or one file; a thrown error is a 400 or an exit status of 2.
///
/// ```swift
/// let version = try CheckedInteger.convert(node.uint64, to: Int.self, "version", in: 1...Int.max, context: "body")
/// let end = try CheckedInteger.add(offset, length, "the index's end", context: path)
/// ```
public enum CheckedInteger {
    /// Parses a whole number written in decimal (an optional `-`, then digits; no `+`, no spaces,
    /// no leading zeros beyond a single `0`), or nil when the text is not one or does not fit `T`.
    public static func parse<T: FixedWidthInteger>(_ text: some StringProtocol, as type: T.Type = T.self) -> T? {
        let bytes = Array(text.utf8)
        guard !bytes.isEmpty, bytes.count <= 40 else { return nil }
        var digits = bytes[...]
        if digits.first == UInt8(ascii: "-") { digits = digits.dropFirst() }
        guard !digits.isEmpty, digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
            return nil
        }
        if digits.count > 1 && digits.first == UInt8(ascii: "0") { return nil }
        return T(String(decoding: bytes, as: UTF8.self), radix: 10)
    }

    /// Parses a decimal whole number within `range`.
    /// - Throws: ``BacklotError/Code/invalidInput`` (or `code`) naming `what`, the text and the range.
    public static func parse<T: FixedWidthInteger>(
        _ text: some StringProtocol, as type: T.Type = T.self, _ what: @autoclosure () -> String,
        in range: ClosedRange<T>? = nil, context: String? = nil,
        code: BacklotError.Code = .invalidInput
    ) throws -> T {
        guard let value: T = parse(text) else {
            throw BacklotError(
                code,
                "\(what()) is \"\(text.prefix(64))\", which is not a whole number in \(describe(range ?? T.min...T.max))",
                context: context, hint: "give a whole number in \(describe(range ?? T.min...T.max))")
        }
        if let range, !range.contains(value) {
            throw BacklotError(
                code, "\(what()) is \(value), outside \(describe(range))", context: context,
                hint: "give a whole number in \(describe(range))")
        }
        return value
    }

    /// Converts `value` to `T`, refusing values that `T` cannot hold or that lie outside `range`.
    /// - Throws: ``BacklotError/Code/invalidInput`` (or `code`) naming `what`, the value and the range.
    public static func convert<T: FixedWidthInteger, S: BinaryInteger>(
        _ value: S, to type: T.Type = T.self, _ what: @autoclosure () -> String,
        in range: ClosedRange<T>? = nil, context: String? = nil,
        code: BacklotError.Code = .invalidInput
    ) throws -> T {
        guard let converted = T(exactly: value) else {
            throw BacklotError(
                code, "\(what()) is \(value), outside \(describe(range ?? T.min...T.max))", context: context,
                hint: "give a whole number in \(describe(range ?? T.min...T.max))")
        }
        if let range, !range.contains(converted) {
            throw BacklotError(
                code, "\(what()) is \(value), outside \(describe(range))", context: context,
                hint: "give a whole number in \(describe(range))")
        }
        return converted
    }

    /// `a + b`, or an error naming `what` when the sum overflows.
    public static func add<T: FixedWidthInteger>(
        _ a: T, _ b: T, _ what: @autoclosure () -> String, context: String? = nil,
        code: BacklotError.Code = .invalidInput
    ) throws -> T {
        let (sum, overflow) = a.addingReportingOverflow(b)
        guard !overflow else { throw BacklotError(code, "\(what()) overflows (\(a) + \(b))", context: context) }
        return sum
    }

    /// `a * b`, or an error naming `what` when the product overflows.
    public static func multiply<T: FixedWidthInteger>(
        _ a: T, _ b: T, _ what: @autoclosure () -> String, context: String? = nil,
        code: BacklotError.Code = .invalidInput
    ) throws -> T {
        let (product, overflow) = a.multipliedReportingOverflow(by: b)
        guard !overflow else { throw BacklotError(code, "\(what()) overflows (\(a) × \(b))", context: context) }
        return product
    }

    /// The sum of `values`, or an error naming `what` when it overflows.
    public static func sum<T: FixedWidthInteger>(
        _ values: some Sequence<T>, _ what: @autoclosure () -> String, context: String? = nil,
        code: BacklotError.Code = .invalidInput
    ) throws -> T {
        var total: T = 0
        for v in values { total = try add(total, v, what(), context: context, code: code) }
        return total
    }

    private static func describe<T: FixedWidthInteger>(_ range: ClosedRange<T>) -> String {
        "\(range.lowerBound)…\(range.upperBound)"
    }
}
