import BacklotJSON
import Foundation

/// How `--json` output is written: one object through `Codable` (keys sorted: a fixed order),
/// laid out by the house printer (``JSONNode/prettyPrinted()``), so that every command's output
/// looks the same, whichever way it was built. The vocabulary is docs/json.md's.
///
/// ```swift
/// struct Removed: Encodable { let pack: String; let removed: Bool }
/// try io.outJSON(Removed(pack: "Levels", removed: true))
/// ```
enum CommandJSON {
    static func text(_ value: some Encodable) throws -> String {
        let compact = try line(value)
        return try JSONReader(source: "the command's output").read(compact).root.prettyPrinted() + "\n"
    }
}

extension CommandJSON {
    /// `value` on one line (errors on standard error), keys sorted.
    static func line(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }
}

/// An error under `--json`, on standard error (docs/json.md).
struct ErrorOutput: Encodable {
    struct Body: Encodable {
        let code: String
        let message: String
        @NullWhenAbsent var context: String?
        @NullWhenAbsent var hint: String?
    }
    let error: Body
}

extension CommandIO {
    /// Writes `value` as the command's JSON output (``CommandJSON``).
    /// - Throws: `EncodingError` for a value JSON cannot hold (a non-finite number).
    func outJSON(_ value: some Encodable) throws { out(try CommandJSON.text(value)) }
}

/// An optional written as `null` when absent (Codable leaves the key out): docs/json.md's fields
/// are always present.
// swift-format-ignore: UseSynthesizedInitializer
@propertyWrapper
struct NullWhenAbsent<Value: Encodable>: Encodable {
    var wrappedValue: Value?
    // Spelled out: the memberwise initialisers of the types that use the wrapper need it.
    init(wrappedValue: Value?) { self.wrappedValue = wrappedValue }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        if let wrappedValue { try c.encode(wrappedValue) } else { try c.encodeNil() }
    }
}

/// Read back (the management API's answers use the same types): `null` or an absent key is nil.
extension NullWhenAbsent: Decodable where Value: Decodable {
    init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        self.init(wrappedValue: c.decodeNil() ? nil : try c.decode(Value.self))
    }
}

extension KeyedDecodingContainer {
    /// An absent key decodes as nil (the synthesized decoder would throw `keyNotFound`).
    func decode<T: Decodable>(_ type: NullWhenAbsent<T>.Type, forKey key: Key) throws -> NullWhenAbsent<T> {
        NullWhenAbsent(wrappedValue: try decodeIfPresent(T.self, forKey: key))
    }
}
