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

    /// A whole number within `range`, through ``CheckedInteger`` (never a trap): a 400 naming the
    /// field and the range for a missing value, a string, a fraction, an exponent or a value outside it.
    func integer<T: FixedWidthInteger>(_ key: String, as type: T.Type, in range: ClosedRange<T>) throws -> T {
        guard case .number(let text)? = root[key]?.kind else {
            throw BacklotError(
                .invalidInput, "\"\(key)\" must be a whole number in \(range.lowerBound)…\(range.upperBound)",
                context: "request body",
                hint: "give \"\(key)\" as a JSON number without a fraction or exponent")
        }
        return try CheckedInteger.parse(text, as: T.self, "\"\(key)\"", in: range, context: "request body")
    }

    /// An optional percentage: above 0 (or 0 itself when `allowingZero`) and at most 100, with at
    /// most two decimals that count (one basis point is 0.01 %); nil when absent or null.
    func percent(_ key: String, allowingZero: Bool = false) throws -> Double? {
        guard let node = root[key] else { return nil }
        if case .null = node.kind { return nil }
        let lowest = allowingZero ? "0" : "above 0"
        guard case .number(let text) = node.kind, Self.isPlainPercentage(text), let d = Double(text), d.isFinite,
            d >= 0,
            d <= 100, (allowingZero && d == 0) || (d * 100).rounded() >= 1
        else {
            throw BacklotError(
                .invalidInput,
                "\"\(key)\" must be a number from \(lowest) to 100 with at most two decimals (a rollout moves in steps of 0.01 %)",
                context: "request body",
                hint: "give a percentage such as 25 or 12.5")
        }
        return d
    }

    /// Digits, and at most two decimals that count (`12.5`, `12.50`, `12.500`): a rollout is kept
    /// in basis points, so `99.999` would be stored as 100 and promote the candidate.
    static func isPlainPercentage(_ text: String) -> Bool {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count <= 2, let whole = parts.first, !whole.isEmpty, whole.allSatisfy(\.isASCII),
            whole.allSatisfy(\.isNumber)
        else { return false }
        guard parts.count == 2 else { return true }
        let fraction = parts[1]
        return !fraction.isEmpty && fraction.allSatisfy { $0.isASCII && $0.isNumber }
            && fraction.dropFirst(2).allSatisfy { $0 == "0" }
    }
}
