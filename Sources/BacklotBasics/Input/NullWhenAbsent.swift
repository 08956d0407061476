/// An optional written as `null` when absent (Codable leaves the key out), and read as nil when
/// `null` or absent: the management API's answers and docs/json.md's fields are always present.
// swift-format-ignore: UseSynthesizedInitializer
@propertyWrapper
public struct NullWhenAbsent<Value: Encodable>: Encodable {
    public var wrappedValue: Value?
    // Spelled out: the memberwise initialisers of the types that use the wrapper need it.
    public init(wrappedValue: Value?) { self.wrappedValue = wrappedValue }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        if let wrappedValue { try c.encode(wrappedValue) } else { try c.encodeNil() }
    }
}

/// Read back (the management API's answers use the same types): `null` or an absent key is nil.
extension NullWhenAbsent: Decodable where Value: Decodable {
    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        self.init(wrappedValue: c.decodeNil() ? nil : try c.decode(Value.self))
    }
}

extension KeyedDecodingContainer {
    /// An absent key decodes as nil (the synthesized decoder would throw `keyNotFound`).
    public func decode<T: Decodable>(_ type: NullWhenAbsent<T>.Type, forKey key: Key) throws -> NullWhenAbsent<T> {
        NullWhenAbsent(wrappedValue: try decodeIfPresent(T.self, forKey: key))
    }
}

extension NullWhenAbsent: Sendable where Value: Sendable {}
extension NullWhenAbsent: Equatable where Value: Equatable {}
extension NullWhenAbsent: Hashable where Value: Hashable {}
