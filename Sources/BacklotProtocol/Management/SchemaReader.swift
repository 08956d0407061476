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

    let probe: Probe
    /// Types that have a schema of their own in the document: referred to, not inlined.
    let named: [ObjectIdentifier: String]
    var codingPath: [any CodingKey] = []
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    /// `T` read at a new position: its probe (with `T`'s schema for named types) and a value of it.
    static func read<T: Decodable>(
        _ type: T.Type, named: [ObjectIdentifier: String], at path: [any CodingKey], root: Bool = false
    ) throws -> (Probe, T) {
        let probe = Probe()
        if let value = scalar(type) {
            probe.shape = .scalar(value.0)
            return (probe, value.1)
        }
        if let wire = type as? any WireValue.Type, let sample = wire.wireSample as? T {
            probe.shape = .scalar(wire.wireSchema)
            return (probe, sample)
        }
        probe.wireObject = type as? any WireObject.Type
        let value = try T(from: SchemaReader(probe: probe, named: named, codingPath: path))
        if case .object = probe.shape, let encodable = value as? any Encodable {
            let data = try JSONEncoder().encode(encodable)
            let object = try JSONSerialization.jsonObject(with: data) as? [String: Any]
            probe.written = Set((object ?? [:]).keys)
        }
        if !root, let name = named[ObjectIdentifier(type)] {
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

    /// A member read: recorded on this position's object.
    func member<T: Decodable>(_ type: T.Type, _ key: some CodingKey, optional: Bool) throws -> T {
        let (child, value) = try Self.read(type, named: named, at: codingPath + [key])
        guard case .object(let members) = probe.shape else {
            throw Unreadable(description: "\(codingPath.map(\.stringValue)): a member read outside an object")
        }
        probe.shape = .object(members + [Probe.Member(name: key.stringValue, probe: child, optional: optional)])
        return value
    }

    struct Keyed<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let reader: SchemaReader
        var codingPath: [any CodingKey] { reader.codingPath }
        var allKeys: [Key] { [] }
        func contains(_ key: Key) -> Bool { true }
        func decodeNil(forKey key: Key) throws -> Bool { false }
        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
            try reader.member(type, key, optional: false)
        }
        func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? { try absent(type, key) }
        func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try reader.member(type, key, optional: false) }
        func decode(_ type: String.Type, forKey key: Key) throws -> String {
            try reader.member(type, key, optional: false)
        }
        func decode(_ type: Double.Type, forKey key: Key) throws -> Double {
            try reader.member(type, key, optional: false)
        }
        func decode(_ type: Float.Type, forKey key: Key) throws -> Float {
            try reader.member(type, key, optional: false)
        }
        func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try reader.member(type, key, optional: false) }
        func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try reader.member(type, key, optional: false) }
        func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 {
            try reader.member(type, key, optional: false)
        }
        func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 {
            try reader.member(type, key, optional: false)
        }
        func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 {
            try reader.member(type, key, optional: false)
        }
        func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try reader.member(type, key, optional: false) }
        func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 {
            try reader.member(type, key, optional: false)
        }
        func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 {
            try reader.member(type, key, optional: false)
        }
        func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 {
            try reader.member(type, key, optional: false)
        }
        func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 {
            try reader.member(type, key, optional: false)
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
            _ = try reader.member(type, key, optional: true)
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
            let (child, value) = try SchemaReader.read(type, named: reader.named, at: codingPath)
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
            let (child, value) = try SchemaReader.read(type, named: reader.named, at: codingPath)
            reader.probe.shape = child.shape
            reader.probe.wireObject = child.wireObject
            return value
        }
    }
}
