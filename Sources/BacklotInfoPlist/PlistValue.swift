import Foundation

/// A property-list value, typed exactly (integers up to 64 bits, signed or not).
public indirect enum PlistValue: Sendable, Hashable {
    case string(String)
    case integer(Int64)
    /// An integer above `Int64.max` (binary plists store them as 128-bit).
    case unsignedInteger(UInt64)
    case real(Double)
    case bool(Bool)
    case date(Date)
    case data([UInt8])
    case array([PlistValue])
    case dictionary([String: PlistValue])

    public var string: String? { if case .string(let s) = self { s } else { nil } }
    public var dictionary: [String: PlistValue]? { if case .dictionary(let d) = self { d } else { nil } }
    public var array: [PlistValue]? { if case .array(let a) = self { a } else { nil } }

    /// The value as a boolean: `<true/>`/`<false/>`, or the integers 0 and 1.
    public var bool: Bool? {
        switch self {
        case .bool(let b): b
        case .integer(0): false
        case .integer(1): true
        default: nil
        }
    }

    /// A short type name for messages.
    public var typeName: String {
        switch self {
        case .string: "a string"
        case .integer, .unsignedInteger: "an integer"
        case .real: "a real number"
        case .bool: "a boolean"
        case .date: "a date"
        case .data: "data"
        case .array: "an array"
        case .dictionary: "a dictionary"
        }
    }
}
