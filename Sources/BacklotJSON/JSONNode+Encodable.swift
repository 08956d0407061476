import Foundation

/// A node written back through `Codable`: a value people wrote (a manifest, an app's `userInfo`)
/// inside JSON a machine emits. Numbers keep their value exactly (through `Decimal`), objects
/// their members.
///
/// ```swift
/// struct Report: Encodable { let manifest: JSONNode }
/// let text = try JSONEncoder().encode(Report(manifest: node))
/// ```
extension JSONNode: Encodable {
    struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    public func encode(to encoder: any Encoder) throws {
        switch kind {
        case .null:
            var c = encoder.singleValueContainer()
            try c.encodeNil()
        case .bool(let b):
            var c = encoder.singleValueContainer()
            try c.encode(b)
        case .string(let s):
            var c = encoder.singleValueContainer()
            try c.encode(s)
        case .number(let text):
            var c = encoder.singleValueContainer()
            if let d = Decimal(string: text, locale: Locale(identifier: "en_US_POSIX")), d.isFinite {
                try c.encode(d)
            } else if let d = Double(text), d.isFinite {
                try c.encode(d)
            } else {
                throw EncodingError.invalidValue(
                    text, .init(codingPath: encoder.codingPath, debugDescription: "not a JSON number"))
            }
        case .array(let elements):
            var c = encoder.unkeyedContainer()
            for e in elements { try c.encode(e) }
        case .object(let members):
            var c = encoder.container(keyedBy: Key.self)
            for m in members { try c.encode(m.value, forKey: Key(stringValue: m.key)) }
        }
    }
}
