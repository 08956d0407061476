import BacklotBasics
import BacklotJSON
import Foundation

/// How the extension protocol's files are read and written (``ExtensionCall``, ``ExtensionReply``):
/// `JSONEncoder` and `JSONDecoder`, numbers checked, every error an `invalidInput` that names the
/// file and the key.
enum ExtensionMessageCoding {
    /// The decoder's user-info key for the name of the file being read (for messages).
    static let sourceKey = CodingUserInfoKey(rawValue: "backlot.extension.source")!

    /// Encodes a call or an answer (keys sorted: the same bytes for the same message).
    static func encode(_ value: some Encodable) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array(try encoder.encode(value))
    }

    /// Decodes a call or an answer read from `source`.
    /// - Throws: ``BacklotError/Code/invalidInput`` naming `source` and what is wrong where.
    static func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8], source: String) throws -> T {
        let decoder = JSONDecoder()
        decoder.userInfo[sourceKey] = source
        do {
            return try decoder.decode(T.self, from: Data(bytes))
        } catch let error as DecodingError {
            throw BacklotError(.invalidInput, "the message is not valid: \(error.explained)", context: source)
        }
    }

    static func source(_ decoder: any Decoder) -> String { decoder.userInfo[sourceKey] as? String ?? "the message" }
}

extension KeyedDecodingContainer {
    /// A whole number of a call or an answer, through ``CheckedInteger`` (never a trap): nil when
    /// the key is absent or null.
    /// - Throws: ``BacklotError/Code/invalidInput`` naming the key when it holds anything but a
    ///   whole number in `range` (a string, `-1` for a size, `1.5`, `2^64`, `1e400`).
    func checkedInteger<T: FixedWidthInteger>(
        _ type: T.Type, forKey key: Key, in range: ClosedRange<T>? = nil, source: String
    ) throws -> T? {
        let bounds = range ?? T.min...T.max
        let name = (codingPath + [key]).pathText
        func refused(_ what: String) -> BacklotError {
            BacklotError(
                .invalidInput,
                "the key \(name) is \(what), not a whole number in \(bounds.lowerBound)…\(bounds.upperBound)",
                context: source)
        }
        let node: JSONNode?
        do {
            node = try decodeIfPresent(JSONNode.self, forKey: key)
        } catch {
            throw refused("a number no JSON reader holds")  // 1e400: beyond every numeric type
        }
        guard let node, node.kind != .null else { return nil }
        guard case .number(let text) = node.kind else { throw refused(node.typeName) }
        return try CheckedInteger.parse(text, as: T.self, "the key \(name)", in: bounds, context: source)
    }

    /// A string that must be there.
    /// - Throws: ``BacklotError/Code/invalidInput`` naming the key.
    func requiredString(forKey key: Key, source: String) throws -> String {
        guard let s = try? decodeIfPresent(String.self, forKey: key) else {
            throw BacklotError(
                .invalidInput, "the key \((codingPath + [key]).pathText) must be a string",
                context: source)
        }
        return s
    }
}
