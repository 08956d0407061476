import BacklotBasics
import BacklotJSON
import Foundation

/// How `--json` output is written: one object through `Codable` (keys sorted: a fixed order), in
/// the house layout of ``JSONNode/prettyPrinted()`` (`"key": value`, two spaces a level, `[]` and
/// `{}` when empty, control characters as `\uXXXX`), so that every command's output looks the
/// same. The vocabulary is docs/json.md's.
///
/// ```swift
/// struct Removed: Encodable { let pack: String; let removed: Bool }
/// try io.outJSON(Removed(pack: "Levels", removed: true))
/// ```
enum CommandJSON {
    static func text(_ value: some Encodable) throws -> String {
        houseLayout(Array(try encoder().encode(value))) + "\n"
    }

    /// The encoder ``text(_:)`` uses (for a caller that lays out many values alike, and
    /// ``houseLayout(_:)`` then).
    static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    /// `JSONEncoder`'s pretty layout turned into the house layout in one pass over its bytes
    /// (never parsed again): `"key" : value` becomes `"key": value`, an empty container written
    /// over lines becomes `[]` or `{}`, and `\b`, `\f` in strings become `\u0008`, `\u000c`.
    static func houseLayout(_ bytes: [UInt8]) -> String {
        let quote = UInt8(ascii: "\"")
        let backslash = UInt8(ascii: "\\")
        let newline = UInt8(ascii: "\n")
        let space = UInt8(ascii: " ")
        let colon = UInt8(ascii: ":")
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var i = 0
        var inString = false
        while i < bytes.count {
            let b = bytes[i]
            if inString {
                if b == backslash, i + 1 < bytes.count {
                    switch bytes[i + 1] {
                    case UInt8(ascii: "b"): out += Array("\\u0008".utf8)
                    case UInt8(ascii: "f"): out += Array("\\u000c".utf8)
                    default: out += [b, bytes[i + 1]]
                    }
                    i += 2
                    continue
                }
                if b == quote { inString = false }
                out.append(b)
                i += 1
                continue
            }
            switch b {
            case quote:
                inString = true
                out.append(b)
            case space where i + 1 < bytes.count && bytes[i + 1] == colon:
                break  // the space of " : "
            case UInt8(ascii: "["), UInt8(ascii: "{"):
                let closer = b == UInt8(ascii: "[") ? UInt8(ascii: "]") : UInt8(ascii: "}")
                var j = i + 1
                if j + 1 < bytes.count, bytes[j] == newline, bytes[j + 1] == newline {
                    j += 2
                    while j < bytes.count, bytes[j] == space { j += 1 }
                    if j < bytes.count, bytes[j] == closer {
                        out += [b, closer]
                        i = j + 1
                        continue
                    }
                }
                out.append(b)
            default:
                out.append(b)
            }
            i += 1
        }
        return String(decoding: out, as: UTF8.self)
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
