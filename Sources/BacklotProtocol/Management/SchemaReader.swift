import BacklotJSON
import Foundation

/// A `Decoder` that reads a type rather than a document: it runs the type's `init(from:)` and
/// records, for each value position, what the type asked for (an object and its members, an
/// array and its element, a scalar), answering with made-up values so that the type can finish.
/// ``JSONSchema/derived(from:)`` turns what it recorded into a schema.
struct SchemaReader: Decoder {
    /// What one value position turned out to be.
    final class Probe {
        enum Shape {
            case unknown
            case scalar(JSONSchema)
            case object([Member])
            case array(Probe)
        }

        struct Member {
            let name: String
            let probe: Probe
            /// Read with `decodeIfPresent`: the type accepts it absent or null.
            let optional: Bool
        }

        var shape = Shape.unknown
        /// The type that decoded itself here, when it is a ``WireObject`` (its member schemas apply).
        var wireObject: (any WireObject.Type)?
        /// Asked `decodeNil()` of a single value: it may be null.
        var nullable = false
        /// An object's members that its value, made with every optional member nil, still writes
        /// (as null: ``NullWhenAbsent``).
        var written: Set<String> = []
    }

    /// The problems a type's `init(from:)` met that no schema can be read from.
    struct Unreadable: Error, CustomStringConvertible {
        let description: String
    }

    /// What every position of one reading shares, and where this one is.
    struct Context {
        /// Types that have a schema of their own in the document: referred to, not inlined.
        let named: [ObjectIdentifier: String]
        /// Types whose `init(from:)` is running: one met again contains itself.
        var reading: Set<ObjectIdentifier> = []
        var path: [any CodingKey] = []

        func at(_ key: any CodingKey) -> Context {
            var c = self
            c.path.append(key)
            return c
        }
    }

    let probe: Probe
    let context: Context
    var codingPath: [any CodingKey] { context.path }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    /// The schema of `type` at a position where no value of it is needed (an optional member,
    /// an array's element): a named type is a reference, read no further, so a type may hold
    /// itself through an optional member or an array.
    static func schema(of type: any Decodable.Type, in context: Context) throws -> Probe {
        if let name = context.named[ObjectIdentifier(type)] {
            let reference = Probe()
            reference.shape = .scalar(.ref(name))
            return reference
        }
        if let optional = type as? any OptionalType.Type {
            let probe = try schema(of: optional.wrappedType, in: context)
            probe.nullable = true
            return probe
        }
        func open<T: Decodable>(_ t: T.Type) throws -> Probe { try read(t, in: context).0 }
        return try open(type)
    }

    /// `T` read at a new position: its probe (a reference for a named type but the `root`) and a
    /// value of it.
    /// - Throws: ``Unreadable`` for a type that holds itself other than through an optional
    ///   member or an array of a named type; what its `init(from:)` throws.
    static func read<T: Decodable>(_ type: T.Type, in context: Context, root: Bool = false) throws -> (Probe, T) {
        let probe = Probe()
        if let value = scalar(type) {
            probe.shape = .scalar(value.0)
            return (probe, value.1)
        }
        if let wire = type as? any WireValue.Type, let sample = wire.wireSample as? T {
            probe.shape = .scalar(wire.wireSchema)
            return (probe, sample)
        }
        if let array = type as? any DecodableArray.Type, let empty = array.empty as? T {
            probe.shape = .array(try schema(of: array.elementType, in: context))
            return (probe, empty)
        }
        if let map = type as? any DecodableDictionary.Type, let empty = map.empty as? T {
            // Members named by the data: an object of any members (a member schema says more).
            probe.shape = .scalar(JSONSchema(type: ["object"]))
            return (probe, empty)
        }
        let id = ObjectIdentifier(type)
        guard !context.reading.contains(id) else {
            throw Unreadable(
                description:
                    "\(context.path.map(\.stringValue)): \(type) holds itself; name it in the document, or hold it optionally"
            )
        }
        var inner = context
        inner.reading.insert(id)
        probe.wireObject = type as? any WireObject.Type
        let value = try T(from: SchemaReader(probe: probe, context: inner))
        if case .object = probe.shape, let encodable = value as? any Encodable {
            let data = try JSONEncoder().encode(encodable)
            let object = try JSONSerialization.jsonObject(with: data) as? [String: Any]
            probe.written = Set((object ?? [:]).keys)
        }
        if !root, let name = context.named[id] {
            let reference = Probe()
            reference.shape = .scalar(.ref(name))
            reference.nullable = probe.nullable
            return (reference, value)
        }
        return (probe, value)
    }

    /// The JSON scalars of Swift: their schema and a value.
    static func scalar<T>(_ type: T.Type) -> (JSONSchema, T)? {
        func pair(_ schema: JSONSchema, _ value: Any) -> (JSONSchema, T)? { (value as? T).map { (schema, $0) } }
        switch type {
        case is String.Type: return pair(.string(), "")
        case is Bool.Type: return pair(.boolean, false)
        case is Double.Type: return pair(.number(), 0.0)
        case is Float.Type: return pair(.number(), Float(0))
        case is Int.Type: return pair(.integer(), 0)
        case is Int64.Type: return pair(.integer(), Int64(0))
        case is Int32.Type: return pair(.integer(), Int32(0))
        case is Int16.Type: return pair(.integer(), Int16(0))
        case is Int8.Type: return pair(.integer(), Int8(0))
        case is UInt64.Type: return pair(.integer(minimum: 0), UInt64(0))
        case is UInt32.Type: return pair(.integer(minimum: 0), UInt32(0))
        case is UInt16.Type: return pair(.integer(minimum: 0), UInt16(0))
        case is UInt8.Type: return pair(.integer(minimum: 0), UInt8(0))
        case is UInt.Type: return pair(.integer(minimum: 0), UInt(0))
        case is JSONNode.Type: return pair(.anyValue(), JSONNode.null)
        default: return nil
        }
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        if case .unknown = probe.shape { probe.shape = .object([]) }
        return KeyedDecodingContainer(Keyed<Key>(reader: self))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer { Unkeyed(reader: self) }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { Single(reader: self) }

    /// A member read with `decode`: recorded on this position's object, and a value of it.
    func member<T: Decodable>(_ type: T.Type, _ key: some CodingKey) throws -> T {
        let (child, value) = try Self.read(type, in: context.at(key))
        try add(key, child, optional: false)
        return value
    }

    /// A member read with `decodeIfPresent`: recorded on this position's object (no value is made).
    func optionalMember(_ type: any Decodable.Type, _ key: some CodingKey) throws {
        try add(key, try Self.schema(of: type, in: context.at(key)), optional: true)
    }

    private func add(_ key: some CodingKey, _ child: Probe, optional: Bool) throws {
        guard case .object(let members) = probe.shape else {
            throw Unreadable(description: "\(codingPath.map(\.stringValue)): a member read outside an object")
        }
        probe.shape = .object(members + [Probe.Member(name: key.stringValue, probe: child, optional: optional)])
    }

    struct Keyed<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let reader: SchemaReader
        var codingPath: [any CodingKey] { reader.codingPath }
        var allKeys: [Key] { [] }
        func contains(_ key: Key) -> Bool { true }
        func decodeNil(forKey key: Key) throws -> Bool { false }
        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
            try reader.member(type, key)
        }
        func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? { try absent(type, key) }
        func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try reader.member(type, key) }
        func decode(_ type: String.Type, forKey key: Key) throws -> String {
            try reader.member(type, key)
        }
        func decode(_ type: Double.Type, forKey key: Key) throws -> Double {
            try reader.member(type, key)
        }
        func decode(_ type: Float.Type, forKey key: Key) throws -> Float {
            try reader.member(type, key)
        }
        func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try reader.member(type, key) }
        func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try reader.member(type, key) }
        func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 {
            try reader.member(type, key)
        }
        func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 {
            try reader.member(type, key)
        }
        func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 {
            try reader.member(type, key)
        }
        func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try reader.member(type, key) }
        func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 {
            try reader.member(type, key)
        }
        func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 {
            try reader.member(type, key)
        }
        func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 {
            try reader.member(type, key)
        }
        func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 {
            try reader.member(type, key)
        }
        func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? { try absent(type, key) }
        func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? { try absent(type, key) }
        func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? { try absent(type, key) }
        func decodeIfPresent(_ type: Float.Type, forKey key: Key) throws -> Float? { try absent(type, key) }
        func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? { try absent(type, key) }
        func decodeIfPresent(_ type: Int8.Type, forKey key: Key) throws -> Int8? { try absent(type, key) }
        func decodeIfPresent(_ type: Int16.Type, forKey key: Key) throws -> Int16? { try absent(type, key) }
        func decodeIfPresent(_ type: Int32.Type, forKey key: Key) throws -> Int32? { try absent(type, key) }
        func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? { try absent(type, key) }
        func decodeIfPresent(_ type: UInt.Type, forKey key: Key) throws -> UInt? { try absent(type, key) }
        func decodeIfPresent(_ type: UInt8.Type, forKey key: Key) throws -> UInt8? { try absent(type, key) }
        func decodeIfPresent(_ type: UInt16.Type, forKey key: Key) throws -> UInt16? { try absent(type, key) }
        func decodeIfPresent(_ type: UInt32.Type, forKey key: Key) throws -> UInt32? { try absent(type, key) }
        func decodeIfPresent(_ type: UInt64.Type, forKey key: Key) throws -> UInt64? { try absent(type, key) }
        /// An optional member: recorded as such, and left absent.
        private func absent<T: Decodable>(_ type: T.Type, _ key: Key) throws -> T? {
            try reader.optionalMember(type, key)
            return nil
        }
        func nestedContainer<NestedKey: CodingKey>(
            keyedBy type: NestedKey.Type, forKey key: Key
        ) throws -> KeyedDecodingContainer<NestedKey> {
            throw Unreadable(description: "\(codingPath.map(\.stringValue)) \(key.stringValue): a nested container")
        }
        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
            throw Unreadable(description: "\(codingPath.map(\.stringValue)) \(key.stringValue): a nested container")
        }
        func superDecoder() throws -> any Decoder {
            throw Unreadable(description: "\(codingPath.map(\.stringValue)): a super decoder")
        }
        func superDecoder(forKey key: Key) throws -> any Decoder { try superDecoder() }
    }

    /// An array: one element, whose schema is the items'.
    struct Unkeyed: UnkeyedDecodingContainer {
        let reader: SchemaReader
        var codingPath: [any CodingKey] { reader.codingPath }
        var count: Int? { 1 }
        var currentIndex = 0
        var isAtEnd: Bool { currentIndex >= 1 }
        mutating func decodeNil() throws -> Bool { false }
        mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
            let (child, value) = try SchemaReader.read(type, in: reader.context)
            reader.probe.shape = .array(child)
            currentIndex += 1
            return value
        }
        mutating func nestedContainer<NestedKey: CodingKey>(
            keyedBy type: NestedKey.Type
        ) throws -> KeyedDecodingContainer<NestedKey> {
            throw Unreadable(description: "\(codingPath.map(\.stringValue)): a nested container in an array")
        }
        mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
            throw Unreadable(description: "\(codingPath.map(\.stringValue)): a nested container in an array")
        }
        mutating func superDecoder() throws -> any Decoder {
            throw Unreadable(description: "\(codingPath.map(\.stringValue)): a super decoder")
        }
    }

    /// One value: null is recorded as allowed, the value as the type it is read as.
    struct Single: SingleValueDecodingContainer {
        let reader: SchemaReader
        var codingPath: [any CodingKey] { reader.codingPath }
        func decodeNil() -> Bool {
            reader.probe.nullable = true
            return false
        }
        func decode<T: Decodable>(_ type: T.Type) throws -> T { try value(type) }
        func decode(_ type: Bool.Type) throws -> Bool { try value(type) }
        func decode(_ type: String.Type) throws -> String { try value(type) }
        func decode(_ type: Double.Type) throws -> Double { try value(type) }
        func decode(_ type: Float.Type) throws -> Float { try value(type) }
        func decode(_ type: Int.Type) throws -> Int { try value(type) }
        func decode(_ type: Int8.Type) throws -> Int8 { try value(type) }
        func decode(_ type: Int16.Type) throws -> Int16 { try value(type) }
        func decode(_ type: Int32.Type) throws -> Int32 { try value(type) }
        func decode(_ type: Int64.Type) throws -> Int64 { try value(type) }
        func decode(_ type: UInt.Type) throws -> UInt { try value(type) }
        func decode(_ type: UInt8.Type) throws -> UInt8 { try value(type) }
        func decode(_ type: UInt16.Type) throws -> UInt16 { try value(type) }
        func decode(_ type: UInt32.Type) throws -> UInt32 { try value(type) }
        func decode(_ type: UInt64.Type) throws -> UInt64 { try value(type) }
        private func value<T: Decodable>(_ type: T.Type) throws -> T {
            let (child, value) = try SchemaReader.read(type, in: reader.context)
            reader.probe.shape = child.shape
            reader.probe.wireObject = child.wireObject
            return value
        }
    }
}

/// An array, whose element type ``SchemaReader`` reads without making one.
protocol DecodableArray {
    static var elementType: any Decodable.Type { get }
    static var empty: Self { get }
}

extension Array: DecodableArray where Element: Decodable {
    static var elementType: any Decodable.Type { Element.self }
    static var empty: Self { [] }
}

/// A dictionary keyed by strings: an object whose members the data names.
protocol DecodableDictionary {
    static var empty: Self { get }
}

extension Dictionary: DecodableDictionary where Key == String, Value: Decodable {
    static var empty: Self { [:] }
}

/// An optional, whose wrapped type ``SchemaReader`` reads as nullable.
protocol OptionalType {
    static var wrappedType: any Decodable.Type { get }
}

extension Optional: OptionalType where Wrapped: Decodable {
    static var wrappedType: any Decodable.Type { Wrapped.self }
}
