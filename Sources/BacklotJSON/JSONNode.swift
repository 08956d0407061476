import BacklotBasics

/// A line and column in a JSON text, both counted from 1 (columns in Unicode scalars).
public struct JSONPosition: Sendable, Hashable, CustomStringConvertible {
    public let line: Int
    public let column: Int

    public init(line: Int, column: Int) {
        self.line = line
        self.column = column
    }

    /// `line L, column C`.
    public var description: String { "line \(line), column \(column)" }
}

/// A JSON value together with where it starts in its text, so that schema errors can point at it.
///
/// Objects keep their members in the order written; numbers keep their exact text, so a value
/// read and written again is unchanged ("kept verbatim").
public struct JSONNode: Sendable, Hashable {
    /// The value.
    public enum Kind: Sendable, Hashable {
        case null
        case bool(Bool)
        /// The number's literal text, exactly as written (valid JSON number syntax).
        case number(String)
        case string(String)
        case array([JSONNode])
        case object([JSONMember])
    }

    public let kind: Kind
    /// Where the value starts; (0, 0) for values built in code.
    public let position: JSONPosition

    public init(_ kind: Kind, at position: JSONPosition = JSONPosition(line: 0, column: 0)) {
        self.kind = kind
        self.position = position
    }

    /// Values are equal when their contents are; where they were written does not matter.
    public static func == (a: JSONNode, b: JSONNode) -> Bool { a.kind == b.kind }
    public func hash(into hasher: inout Hasher) { hasher.combine(kind) }

    /// The string value, or nil.
    public var stringValue: String? { if case .string(let s) = kind { s } else { nil } }
    /// The members, or nil when this is not an object.
    public var objectMembers: [JSONMember]? { if case .object(let m) = kind { m } else { nil } }
    /// The elements, or nil when this is not an array.
    public var arrayElements: [JSONNode]? { if case .array(let a) = kind { a } else { nil } }

    /// The whole number this value holds, when it is a number written as a decimal integer that
    /// fits `T`; nil otherwise (never a trap: see ``CheckedInteger``).
    public func integer<T: FixedWidthInteger>(as type: T.Type = T.self) -> T? {
        guard case .number(let text) = kind else { return nil }
        return CheckedInteger.parse(text, as: T.self)
    }

    /// The member named `key` of an object.
    public subscript(key: String) -> JSONNode? {
        objectMembers?.first { $0.key == key }?.value
    }

    /// A short name of the value's type for messages: "a string", "an object", …
    public var typeName: String {
        switch kind {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}

/// One `"key": value` member of a JSON object.
public struct JSONMember: Sendable, Hashable {
    public let key: String
    public let keyPosition: JSONPosition
    public let value: JSONNode

    /// Members are equal when their keys and values are; positions do not matter.
    public static func == (a: JSONMember, b: JSONMember) -> Bool { a.key == b.key && a.value == b.value }
    public func hash(into hasher: inout Hasher) {
        hasher.combine(key)
        hasher.combine(value)
    }

    public init(key: String, keyPosition: JSONPosition = JSONPosition(line: 0, column: 0), value: JSONNode) {
        self.key = key
        self.keyPosition = keyPosition
        self.value = value
    }
}
