import Foundation

extension JSONNode {
    /// Compact JSON text. With `sortedKeys`, object members are ordered by the UTF-8 bytes of
    /// their keys, which makes the text canonical for values built by Backlot.
    public func serialized(sortedKeys: Bool = false) -> String {
        var out = ""
        write(to: &out, sortedKeys: sortedKeys)
        return out
    }

    private func write(to out: inout String, sortedKeys: Bool) {
        switch kind {
        case .null: out += "null"
        case .bool(let b): out += b ? "true" : "false"
        case .number(let text): out += text
        case .string(let s): JSONNode.writeString(s, to: &out)
        case .array(let elements):
            out += "["
            for (i, e) in elements.enumerated() {
                if i > 0 { out += "," }
                e.write(to: &out, sortedKeys: sortedKeys)
            }
            out += "]"
        case .object(let members):
            out += "{"
            let ordered =
                sortedKeys
                ? members.sorted { Array($0.key.utf8).lexicographicallyPrecedes(Array($1.key.utf8)) } : members
            for (i, m) in ordered.enumerated() {
                if i > 0 { out += "," }
                JSONNode.writeString(m.key, to: &out)
                out += ":"
                m.value.write(to: &out, sortedKeys: sortedKeys)
            }
            out += "}"
        }
    }

    /// Writes `s` as a JSON string literal, escaping only what JSON requires.
    public static func writeString(_ s: String, to out: inout String) {
        out += "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }

    /// A JSON string literal for `s`.
    public static func quoted(_ s: String) -> String {
        var out = ""
        writeString(s, to: &out)
        return out
    }
}

extension JSONNode {
    /// JSON text indented by two spaces per level, members in the order held.
    public func prettyPrinted() -> String {
        var out = ""
        writePretty(to: &out, indent: 0)
        return out
    }

    private func writePretty(to out: inout String, indent: Int) {
        let pad = String(repeating: "  ", count: indent + 1)
        let end = String(repeating: "  ", count: indent)
        switch kind {
        case .array(let elements) where !elements.isEmpty:
            out += "[\n"
            for (i, e) in elements.enumerated() {
                out += pad
                e.writePretty(to: &out, indent: indent + 1)
                out += i + 1 < elements.count ? ",\n" : "\n"
            }
            out += end + "]"
        case .object(let members) where !members.isEmpty:
            out += "{\n"
            for (i, m) in members.enumerated() {
                out += pad
                JSONNode.writeString(m.key, to: &out)
                out += ": "
                m.value.writePretty(to: &out, indent: indent + 1)
                out += i + 1 < members.count ? ",\n" : "\n"
            }
            out += end + "}"
        default:
            out += serialized()
        }
    }
}

/// Builders for JSON output: `JSONNode.object(["a": .string("x")])`.
extension JSONNode {
    public static func object(_ members: KeyValuePairs<String, JSONNode>) -> JSONNode {
        JSONNode(.object(members.map { JSONMember(key: $0.key, value: $0.value) }))
    }
    public static func array(_ elements: [JSONNode]) -> JSONNode { JSONNode(.array(elements)) }
    public static func string(_ s: String) -> JSONNode { JSONNode(.string(s)) }
    public static func number<T: BinaryInteger>(_ n: T) -> JSONNode { JSONNode(.number(String(n))) }
    public static func number(_ d: Double) -> JSONNode {
        JSONNode(.number(d.isFinite ? String(format: "%.6g", d) : "0"))
    }
    public static func bool(_ b: Bool) -> JSONNode { JSONNode(.bool(b)) }
    public static var null: JSONNode { JSONNode(.null) }
}
