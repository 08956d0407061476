import BacklotBasics
import BacklotHTTPServer
import BacklotJSON
import BacklotProtocol

/// Reads a request body (a JSON object ``JSONReader`` parsed) into the endpoint's `Decodable`
/// body type (``API``), with the rules of the OpenAPI document and 400 errors that name the field:
/// a member the type does not have is refused (`unknownField`, listing those it has); whole numbers
/// are read exactly from their text through ``CheckedInteger`` (`3621.0` is 3621; an exponent, a
/// real fraction or a value outside the type is refused, never trapped on); a string enumeration
/// (``WireEnumeration``) names its cases; a ``API/RolloutShare`` is rounded down from the exact
/// decimal; a ``JSONNode`` member is kept as it is. An absent member and `null` are both nil for
/// an optional member.
///
/// ```swift
/// let create = try RequestBodyDecoder.decode(API.AppCreate.self, from: root)
/// ```
struct RequestBodyDecoder {
    /// `T` from `root`, which must be an object holding only `T`'s members.
    /// - Throws: ``BacklotError/Code/invalidInput`` (or `HTTPError` 400 `unknownField`) naming the member.
    static func decode<T: Decodable>(_ type: T.Type, from root: JSONNode) throws -> T {
        guard root.objectMembers != nil else {
            throw HTTPError(400, code: .badRequest, "the body must be a JSON object", context: "request body")
        }
        return try value(T.self, root, name: "")
    }

    /// `T` from one node: a number, an enumeration, a rollout share or a node as it is; an object
    /// holding only `T`'s members (named `name.member` in errors); an array (`name[i]`).
    static func value<T: Decodable>(_ type: T.Type, _ node: JSONNode, name: String) throws -> T {
        if let integer = T.self as? any FixedWidthInteger.Type {
            return try Keyed<AnyKey>.integer(integer, name, node) as! T
        }
        if let enumeration = T.self as? any WireEnumeration.Type {
            return try Keyed<AnyKey>.enumeration(enumeration, name, node) as! T
        }
        if T.self == API.RolloutShare.self {
            guard case .number(let text) = node.kind else { throw API.RolloutShare.outOfRange(name) }
            return try API.RolloutShare(exactNumber: text, field: name) as! T
        }
        if T.self == JSONNode.self { return node as! T }
        if T.self == String.self {
            guard let s = node.stringValue else {
                throw BacklotError(.invalidInput, "\"\(name)\" must be a string", context: "request body")
            }
            return s as! T
        }
        if T.self == Bool.self {
            guard case .bool(let b) = node.kind else {
                throw BacklotError(.invalidInput, "\"\(name)\" must be true or false", context: "request body")
            }
            return b as! T
        }
        if let members = node.objectMembers {
            let reader = Reader(members: members, prefix: name.isEmpty ? "" : name + ".")
            let value = try T(from: reader)
            if let unknown = members.first(where: { !reader.read.value.contains($0.key) }) {
                throw HTTPError(
                    400, code: .unknownField, "unknown field \"\(reader.prefix)\(unknown.key)\"",
                    context: "request body",
                    hint: "the fields allowed: \(reader.read.value.sorted().joined(separator: ", "))")
            }
            return value
        }
        if let elements = node.arrayElements {
            return try T(from: ElementsReader(elements: elements, name: name))
        }
        throw BacklotError(.invalidInput, "\"\(name)\" cannot be read here", context: "request body")
    }

    /// The fields read so far, shared by an object's reader and its containers (one decoding,
    /// on one thread: nothing here is Sendable).
    final class Fields {
        var value: Set<String> = []
    }

    struct AnyKey: CodingKey {
        let stringValue: String
        init?(stringValue: String) { self.stringValue = stringValue }
        var intValue: Int? { nil }
        init?(intValue: Int) { nil }
    }

    /// An object's members.
    struct Reader: Decoder {
        let members: [JSONMember]
        /// `held[0].` for the members of an array's element, empty at the top.
        let prefix: String
        let read = Fields()
        var codingPath: [any CodingKey] { [] }
        var userInfo: [CodingUserInfoKey: Any] { [:] }

        func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
            KeyedDecodingContainer(Keyed<Key>(reader: self))
        }
        func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
            throw HTTPError(
                400, code: .badRequest,
                "\(prefix.isEmpty ? "the body" : "\"\(prefix.dropLast())\"") must be a JSON object of fields",
                context: "request body")
        }
        func singleValueContainer() throws -> any SingleValueDecodingContainer {
            throw HTTPError(
                400, code: .badRequest,
                "\(prefix.isEmpty ? "the body" : "\"\(prefix.dropLast())\"") must be a JSON object of fields",
                context: "request body")
        }

        func node(_ key: String) -> JSONNode? {
            read.value.insert(key)
            return members.first { $0.key == key }?.value
        }
    }

    /// An array's elements, each read as `name[i]`.
    struct ElementsReader: Decoder {
        let elements: [JSONNode]
        let name: String
        var codingPath: [any CodingKey] { [] }
        var userInfo: [CodingUserInfoKey: Any] { [:] }

        func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
            throw BacklotError(.invalidInput, "\"\(name)\" must be an object, not an array", context: "request body")
        }
        func unkeyedContainer() throws -> any UnkeyedDecodingContainer { Elements(elements: elements, name: name) }
        func singleValueContainer() throws -> any SingleValueDecodingContainer {
            throw BacklotError(.invalidInput, "\"\(name)\" cannot be an array", context: "request body")
        }
    }

    struct Elements: UnkeyedDecodingContainer {
        let elements: [JSONNode]
        let name: String
        var currentIndex = 0
        var codingPath: [any CodingKey] { [] }
        var count: Int? { elements.count }
        var isAtEnd: Bool { currentIndex >= elements.count }

        mutating func next<T: Decodable>(_ type: T.Type) throws -> T {
            guard !isAtEnd else {
                throw BacklotError(.invalidInput, "\"\(name)\" has too few elements", context: "request body")
            }
            let value = try RequestBodyDecoder.value(T.self, elements[currentIndex], name: "\(name)[\(currentIndex)]")
            currentIndex += 1
            return value
        }

        mutating func decodeNil() throws -> Bool {
            guard !isAtEnd, case .null = elements[currentIndex].kind else { return false }
            currentIndex += 1
            return true
        }
        mutating func decode(_ type: Bool.Type) throws -> Bool { try next(Bool.self) }
        mutating func decode(_ type: String.Type) throws -> String { try next(String.self) }
        mutating func decode(_ type: Double.Type) throws -> Double {
            throw BacklotError(.invalidInput, "\"\(name)\" cannot be read here", context: "request body")
        }
        mutating func decode(_ type: Float.Type) throws -> Float {
            throw BacklotError(.invalidInput, "\"\(name)\" cannot be read here", context: "request body")
        }
        mutating func decode(_ type: Int.Type) throws -> Int { try next(Int.self) }
        mutating func decode(_ type: Int8.Type) throws -> Int8 { try next(Int8.self) }
        mutating func decode(_ type: Int16.Type) throws -> Int16 { try next(Int16.self) }
        mutating func decode(_ type: Int32.Type) throws -> Int32 { try next(Int32.self) }
        mutating func decode(_ type: Int64.Type) throws -> Int64 { try next(Int64.self) }
        mutating func decode(_ type: UInt.Type) throws -> UInt { try next(UInt.self) }
        mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try next(UInt8.self) }
        mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try next(UInt16.self) }
        mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try next(UInt32.self) }
        mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try next(UInt64.self) }
        mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try next(T.self) }
        mutating func nestedContainer<NestedKey: CodingKey>(
            keyedBy type: NestedKey.Type
        ) throws -> KeyedDecodingContainer<NestedKey> {
            throw BacklotError(.invalidInput, "\"\(name)\" cannot be read here", context: "request body")
        }
        mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
            throw BacklotError(.invalidInput, "\"\(name)\" cannot be read here", context: "request body")
        }
        mutating func superDecoder() throws -> any Decoder { ElementsReader(elements: elements, name: name) }
    }

    struct Keyed<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let reader: Reader
        var codingPath: [any CodingKey] { [] }
        var allKeys: [Key] { reader.members.compactMap { Key(stringValue: $0.key) } }

        func contains(_ key: Key) -> Bool {
            guard let node = reader.node(key.stringValue) else { return false }
            if case .null = node.kind { return false }
            return true
        }
        func decodeNil(forKey key: Key) throws -> Bool { !contains(key) }

        func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool {
            guard case .bool(let b)? = reader.node(key.stringValue)?.kind else {
                throw BacklotError(
                    .invalidInput, "\"\(reader.prefix)\(key.stringValue)\" is required: true or false",
                    context: "request body")
            }
            return b
        }

        func decode(_ type: String.Type, forKey key: Key) throws -> String {
            guard let s = reader.node(key.stringValue)?.stringValue else {
                throw BacklotError(
                    .invalidInput, "\"\(reader.prefix)\(key.stringValue)\" must be a string", context: "request body")
            }
            return s
        }

        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
            let name = reader.prefix + key.stringValue
            guard let node = reader.node(key.stringValue) else {
                if let integer = T.self as? any FixedWidthInteger.Type {
                    return try Self.integer(integer, name, nil) as! T
                }
                if let enumeration = T.self as? any WireEnumeration.Type {
                    return try Self.enumeration(enumeration, name, nil) as! T
                }
                if T.self == API.RolloutShare.self { throw API.RolloutShare.outOfRange(name) }
                throw BacklotError(.invalidInput, "\"\(name)\" is required", context: "request body")
            }
            return try RequestBodyDecoder.value(T.self, node, name: name)
        }

        /// A whole number of type `T` read exactly from the node's text, never through a `Double`.
        static func integer<T: FixedWidthInteger>(_ type: T.Type, _ key: String, _ node: JSONNode?) throws -> T {
            let what = "\"\(key)\""
            let wanted = "a whole number in \(T.min)…\(T.max)"
            let hint = "give \"\(key)\" as a JSON number without an exponent, such as 12 (or 12.0)"
            guard case .number(let text)? = node?.kind, !text.contains(where: { $0 == "e" || $0 == "E" }),
                let decimal = JSONDecimal(text)
            else {
                throw BacklotError(.invalidInput, "\(what) must be \(wanted)", context: "request body", hint: hint)
            }
            guard decimal.isWhole else {
                throw BacklotError(
                    .invalidInput, "\(what) is \(text.prefix(64)), which is not \(wanted)", context: "request body",
                    hint: hint)
            }
            guard let digits = decimal.wholeDigits(atMost: 40), let value = CheckedInteger.parse(digits, as: T.self)
            else {
                throw BacklotError(
                    .invalidInput, "\(what) is \(text.prefix(64)), outside \(T.min)…\(T.max)",
                    context: "request body", hint: "give \(wanted)")
            }
            return value
        }

        static func enumeration<T: WireEnumeration>(_ type: T.Type, _ key: String, _ node: JSONNode?) throws -> T {
            guard let text = node?.stringValue, let value = T(rawValue: text) else {
                throw BacklotError(
                    .invalidInput, "\"\(key)\" must be \(T.caseList)", context: "request body")
            }
            return value
        }

        func nestedContainer<NestedKey: CodingKey>(
            keyedBy type: NestedKey.Type, forKey key: Key
        ) throws
            -> KeyedDecodingContainer<NestedKey>
        {
            throw BacklotError(.invalidInput, "\"\(key.stringValue)\" cannot be an object", context: "request body")
        }
        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
            throw BacklotError(.invalidInput, "\"\(key.stringValue)\" cannot be an array", context: "request body")
        }
        func superDecoder() throws -> any Decoder { reader }
        func superDecoder(forKey key: Key) throws -> any Decoder { reader }
    }
}
