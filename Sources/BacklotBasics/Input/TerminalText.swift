/// Text from outside — a pack's paths, a manifest, a catalog, an answer of the API — made safe to
/// show on a terminal, as `ls -b` and `git` show file names.
///
/// A name can hold bytes a terminal obeys rather than shows: ESC starts control sequences (move
/// the cursor, rewrite the title, set the clipboard), BEL rings, `\r` and backspace overwrite
/// what was printed, bidirectional controls reorder a line so that `txt.exe` reads `exe.txt`,
/// and zero-width characters make two different names look the same. ``quoted(_:)`` shows such
/// a name in double quotes with each of those characters escaped; a plain name is shown as is.
/// JSON output never goes through it (JSON escapes what it must, and a program wants the bytes).
///
/// ```swift
/// TerminalText.quoted("level1/a.txt")        // level1/a.txt
/// TerminalText.quoted("a\u{1B}]0;owned\u{7}") // "a\x1B]0;owned\x07"
/// TerminalText.quoted("invoice\u{202E}fdp.exe") // "invoice\u{202E}fdp.exe"
/// ```
public enum TerminalText {
    /// `text` as is when every character in it is visible and harmless, else in double quotes
    /// with each unsafe character (and `"` and `\`) escaped.
    public static func quoted(_ text: String) -> String {
        guard needsQuoting(text) else { return text }
        return "\"" + escaped(text, escapingQuotes: true) + "\""
    }

    /// The bytes of a path (which need not be UTF-8) as ``quoted(_:)`` shows them; a byte that is
    /// not part of valid UTF-8 is shown as `\xHH`.
    public static func quoted<Bytes: Collection>(bytes: Bytes) -> String where Bytes.Element == UInt8 {
        if let text = String(validating: bytes, as: UTF8.self) { return quoted(text) }
        var out = "\""
        var parser = Unicode.UTF8.ForwardParser()
        var input = bytes.makeIterator()
        // The bytes not parsed yet: the parser reports an ill-formed sequence by its length only.
        var rest = Array(bytes)[...]
        loop: while true {
            switch parser.parseScalar(from: &input) {
            case .valid(let encoded):
                let scalar = Unicode.UTF8.decode(encoded)
                out += escaped(String(Character(scalar)), escapingQuotes: true)
                rest = rest.dropFirst(encoded.count)
            case .error(let length):
                for byte in rest.prefix(length) { out += hex(UInt32(byte), width: 2, prefix: "\\x") }
                rest = rest.dropFirst(length)
            case .emptyInput:
                break loop
            }
        }
        return out + "\""
    }

    /// `text` with each unsafe character escaped (`\n`, `\t`, `\r`, `\xHH` for the other
    /// controls, `\u{HHHH}` for bidirectional, invisible and unusual space characters), and with
    /// `escapingQuotes`, `"` and `\` too. For text already inside a message of our own.
    public static func escaped(_ text: String, escapingQuotes: Bool = false) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            if escapingQuotes, scalar == "\"" || scalar == "\\" {
                out += "\\" + String(scalar)
            } else if isUnsafe(scalar) {
                switch scalar {
                case "\n": out += "\\n"
                case "\t": out += "\\t"
                case "\r": out += "\\r"
                default:
                    out +=
                        scalar.value < 0x80
                        ? hex(scalar.value, width: 2, prefix: "\\x")
                        : "\\u{" + hex(scalar.value, width: 4, prefix: "") + "}"
                }
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// Text of our own that carries outside names (a command's human output): every unsafe
    /// character escaped but the line breaks and tabs that lay the text out.
    public static func sanitized(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: { $0 != "\n" && $0 != "\t" && isUnsafe($0) }) else { return text }
        var out = ""
        var first = true
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if !first { out += "\n" }
            first = false
            var firstField = true
            for field in line.split(separator: "\t", omittingEmptySubsequences: false) {
                if !firstField { out += "\t" }
                firstField = false
                out += escaped(String(field))
            }
        }
        return out
    }

    /// Whether ``quoted(_:)`` quotes `text`.
    public static func needsQuoting(_ text: String) -> Bool {
        text.unicodeScalars.contains { isUnsafe($0) || $0 == "\"" || $0 == "\\" }
    }

    /// A character a terminal obeys, hides or reorders rather than shows as itself: the C0 and C1
    /// controls and DEL; format characters (bidirectional embeddings, overrides and isolates,
    /// zero-width spaces and joiners, the byte-order mark, soft hyphens, tags); line and paragraph
    /// separators; spaces other than U+0020; and the other default-ignorable code points
    /// (Hangul fillers, the combining grapheme joiner), but for the two emoji presentation selectors.
    public static func isUnsafe(_ scalar: Unicode.Scalar) -> Bool {
        let v = scalar.value
        if v < 0x20 || (v >= 0x7F && v < 0xA0) { return true }
        if v < 0x7F { return false }
        if v == 0xFE0E || v == 0xFE0F { return false }
        let properties = scalar.properties
        switch properties.generalCategory {
        case .control, .format, .lineSeparator, .paragraphSeparator, .spaceSeparator: return true
        default: return properties.isDefaultIgnorableCodePoint
        }
    }

    private static func hex(_ value: UInt32, width: Int, prefix: String) -> String {
        let digits = String(value, radix: 16, uppercase: true)
        return prefix + String(repeating: "0", count: max(0, width - digits.count)) + digits
    }
}
