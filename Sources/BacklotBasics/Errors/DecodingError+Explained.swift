import Foundation

extension DecodingError {
    /// What is wrong and where, for a message: `versions[2].state: expected a string, found a
    /// number`, `version: missing`, or the decoder's own words for JSON that does not parse.
    ///
    /// ```swift
    /// do { _ = try JSONDecoder().decode(Answer.self, from: data) } catch let e as DecodingError {
    ///     throw BacklotError(.io, "the answer is not what was expected: \(e.explained)")
    /// }
    /// ```
    public var explained: String {
        func path(_ keys: [any CodingKey]) -> String { keys.isEmpty ? "the top level" : keys.pathText }
        switch self {
        case .typeMismatch(let type, let c):
            return "\(path(c.codingPath)): expected \(Self.name(type)), \(c.debugDescription)"
        case .valueNotFound(let type, let c):
            return "\(path(c.codingPath)): expected \(Self.name(type)), found null"
        case .keyNotFound(let key, let c):
            return "\(path(c.codingPath + [key])): missing"
        case .dataCorrupted(let c):
            return "\(path(c.codingPath)): \(c.debugDescription)"
        @unknown default:
            return String(describing: self)
        }
    }

    private static func name(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is Bool.Type: "a boolean"
        case is any FixedWidthInteger.Type: "a whole number"
        case is Double.Type, is Decimal.Type: "a number"
        default: "\(type)"
        }
    }
}

extension Array where Element == any CodingKey {
    /// A coding path as messages spell it: `packs[0].downloadSize` (empty for the top level).
    public var pathText: String {
        var text = ""
        for key in self {
            if let i = key.intValue { text += "[\(i)]" } else { text += (text.isEmpty ? "" : ".") + key.stringValue }
        }
        return text
    }
}
