import BacklotBasics

/// Reads JSON, and optionally the relaxed JSON that people and Apple's template write:
/// `//` and `/* */` comments wherever whitespace may stand, and a trailing comma before `]` or `}`
/// (reported as a warning). Everything else is strict RFC 8259 JSON, and every error names the
/// line and column.
///
/// ```swift
/// let result = try JSONReader(source: "Manifest.json").read(bytes)
/// for warning in result.warnings { print(warning) }
/// let id = result.root["assetPackID"]?.stringValue
/// ```
public struct JSONReader: Sendable {
    /// The name used in messages, usually the file path.
    public var source: String
    /// Accept `//` and `/* */` comments.
    public var allowsComments: Bool
    /// Accept one trailing comma in arrays and objects, with a warning.
    public var allowsTrailingCommas: Bool
    /// How deeply arrays and objects may nest.
    public var maximumDepth: Int
    /// How many values (each string, number, literal, array and object) a text may hold. A value
    /// in memory is some 40 to 110 bytes where its text can be 2 (`[0,0,…]`, `[[],[],…]`), so a
    /// 16 MB text could otherwise take half a gigabyte; this bounds it to about 100 MB whatever
    /// the text. A catalog of 10,000 packs holds under 300,000 values.
    public var maximumValues: Int

    /// The default of ``maximumValues``.
    public static let standardMaximumValues = 1 << 20

    public init(
        source: String, allowsComments: Bool = true, allowsTrailingCommas: Bool = true, maximumDepth: Int = 256,
        maximumValues: Int = JSONReader.standardMaximumValues
    ) {
        self.source = source
        self.allowsComments = allowsComments
        self.allowsTrailingCommas = allowsTrailingCommas
        self.maximumDepth = maximumDepth
        self.maximumValues = maximumValues
    }

    /// What was read: the root value and any warnings (trailing commas).
    public struct Result: Sendable {
        public let root: JSONNode
        public let warnings: [Warning]
        /// Bytes examined to compute line and column positions (what keeps reading linear).
        let positionBytesScanned: Int

        init(root: JSONNode, warnings: [Warning], positionBytesScanned: Int = 0) {
            self.root = root
            self.warnings = warnings
            self.positionBytesScanned = positionBytesScanned
        }
    }

    /// Something accepted that a strict JSON reader would refuse.
    public struct Warning: Sendable, Hashable, CustomStringConvertible {
        public let position: JSONPosition
        public let message: String
        public var description: String { "\(position): \(message)" }
    }

    /// Parses a whole text.
    /// - Throws: ``BacklotError/Code/invalidJSON`` naming the line and column.
    public func read(_ bytes: [UInt8]) throws -> Result {
        var parser = Parser(bytes: bytes, reader: self)
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { parser.index = 3 }  // UTF-8 byte-order mark
        guard String(validating: bytes, as: UTF8.self) != nil else {
            let bad = Parser.firstInvalidUTF8(bytes)
            for i in 0..<bad where bytes[i] == 0x0A {
                parser.line += 1
                parser.lineStart = i + 1
            }
            parser.index = bad
            throw parser.error("the text is not valid UTF-8", hint: "save the file as UTF-8")
        }
        try parser.skipSpace()
        let root = try parser.value(depth: 0)
        try parser.skipSpace()
        if parser.index < bytes.count {
            throw parser.error(
                "unexpected text after the end of the JSON value",
                hint: "a JSON file holds one value; remove what follows it")
        }
        return Result(root: root, warnings: parser.warnings, positionBytesScanned: parser.positionBytesScanned)
    }

    /// Parses a string.
    public func read(_ text: String) throws -> Result { try read(Array(text.utf8)) }
}

private struct Parser {
    let bytes: [UInt8]
    let reader: JSONReader
    var index = 0
    var line = 1
    var lineStart = 0
    var warnings: [JSONReader.Warning] = []
    /// The values read so far (checked against ``JSONReader/maximumValues`` before each is made).
    var values = 0
    /// The column of `columnIndex` on the current line: positions are computed from the last one
    /// asked for, so a long line is scanned once in all, not once per value (linear time).
    var columnIndex = 0
    var column = 1
    var positionBytesScanned = 0

    init(bytes: [UInt8], reader: JSONReader) {
        self.bytes = bytes
        self.reader = reader
    }

    var position: JSONPosition {
        mutating get {
            // Columns count Unicode scalars: skip UTF-8 continuation bytes. Resume from the last
            // position computed on this line (rescan only when asked for an earlier byte).
            if columnIndex < lineStart || columnIndex > index {
                columnIndex = lineStart
                column = 1
            }
            var i = columnIndex
            let end = min(index, bytes.count)
            while i < end {
                if bytes[i] & 0xC0 != 0x80 { column += 1 }
                i += 1
            }
            positionBytesScanned += max(0, end - columnIndex)
            columnIndex = max(columnIndex, end)
            return JSONPosition(line: line, column: column)
        }
    }

    mutating func error(_ message: String, hint: String? = nil, at position: JSONPosition? = nil) -> BacklotError {
        let p = position ?? self.position
        return BacklotError(.invalidJSON, message, context: "\(reader.source):\(p.line):\(p.column)", hint: hint)
    }

    /// The offset of the first byte that does not start or continue a valid UTF-8 sequence.
    static func firstInvalidUTF8(_ bytes: [UInt8]) -> Int {
        var i = 0
        while i < bytes.count {
            let b = bytes[i]
            let length: Int
            switch b {
            case 0x00...0x7F: length = 1
            case 0xC2...0xDF: length = 2
            case 0xE0...0xEF: length = 3
            case 0xF0...0xF4: length = 4
            default: return i
            }
            guard i + length <= bytes.count,
                String(validating: bytes[i..<i + length], as: UTF8.self) != nil
            else { return i }
            i += length
        }
        return i
    }

    mutating func newline() {
        line += 1
        lineStart = index
    }

    mutating func skipSpace() throws {
        while index < bytes.count {
            let c = bytes[index]
            switch c {
            case 0x20, 0x09, 0x0D:
                index += 1
            case 0x0A:
                index += 1
                newline()
            case UInt8(ascii: "/")
            where index + 1 < bytes.count
                && (bytes[index + 1] == UInt8(ascii: "/") || bytes[index + 1] == UInt8(ascii: "*")):
                guard reader.allowsComments else { throw error("comments are not allowed in strict JSON") }
                if bytes[index + 1] == UInt8(ascii: "/") {
                    while index < bytes.count && bytes[index] != 0x0A { index += 1 }
                } else {
                    let start = position
                    index += 2
                    var closed = false
                    while index < bytes.count {
                        if bytes[index] == UInt8(ascii: "*"), index + 1 < bytes.count,
                            bytes[index + 1] == UInt8(ascii: "/")
                        {
                            index += 2
                            closed = true
                            break
                        }
                        index += 1
                        if bytes[index - 1] == 0x0A { newline() }
                    }
                    if !closed { throw error("a /* comment is never closed", hint: "end it with */", at: start) }
                }
            default:
                return
            }
        }
    }

    mutating func expect(_ c: UInt8, _ what: String) throws {
        guard index < bytes.count, bytes[index] == c else {
            throw error("expected \(what) but found \(describeHere())")
        }
        index += 1
    }

    func describeHere() -> String {
        guard index < bytes.count else { return "the end of the text" }
        let c = bytes[index]
        if c >= 0x20 && c < 0x7F { return "'\(Character(UnicodeScalar(c)))'" }
        return String(format: "byte 0x%02X", c)
    }

    mutating func value(depth: Int) throws -> JSONNode {
        guard depth < reader.maximumDepth else {
            throw error("arrays and objects nest more than \(reader.maximumDepth) deep")
        }
        values += 1
        guard values <= reader.maximumValues else {
            throw error(
                "the text holds more than \(reader.maximumValues) values; at most \(reader.maximumValues) are read",
                hint: "a file this large is not one Backlot writes or needs: split it, or check where it came from")
        }
        let start = position
        guard index < bytes.count else { throw error("expected a value but the text ended") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try object(depth: depth, start: start)
        case UInt8(ascii: "["): return try array(depth: depth, start: start)
        case UInt8(ascii: "\""): return JSONNode(.string(try string()), at: start)
        case UInt8(ascii: "t"):
            try literal("true")
            return JSONNode(.bool(true), at: start)
        case UInt8(ascii: "f"):
            try literal("false")
            return JSONNode(.bool(false), at: start)
        case UInt8(ascii: "n"):
            try literal("null")
            return JSONNode(.null, at: start)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return JSONNode(.number(try number()), at: start)
        case UInt8(ascii: "'"):
            throw error("strings must use double quotes", hint: "write \"…\" instead of '…'")
        default:
            throw error("expected a value but found \(describeHere())")
        }
    }

    mutating func literal(_ word: String) throws {
        let w = Array(word.utf8)
        guard bytes.count - index >= w.count, Array(bytes[index..<index + w.count]) == w else {
            throw error("expected a value but found \(describeHere())", hint: "true, false and null are lowercase")
        }
        index += w.count
    }

    mutating func number() throws -> String {
        let start = index
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        func digits() -> Int {
            let s = index
            while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") {
                index += 1
            }
            return index - s
        }
        guard index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") else {
            throw error("a number must have digits after '-'")
        }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
            if index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") {
                throw error("numbers must not have leading zeros", hint: "remove the leading zeros")
            }
        } else {
            _ = digits()
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            if digits() == 0 { throw error("a number needs digits after the decimal point") }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                index += 1
            }
            if digits() == 0 { throw error("a number needs digits in its exponent") }
        }
        return String(decoding: bytes[start..<index], as: UTF8.self)
    }

    mutating func string() throws -> String {
        let start = position
        index += 1
        var scalars = String.UnicodeScalarView()
        var runStart = index
        func flush(_ p: inout Parser) {
            if runStart < p.index {
                scalars.append(contentsOf: String(decoding: p.bytes[runStart..<p.index], as: UTF8.self).unicodeScalars)
            }
        }
        while true {
            guard index < bytes.count else {
                throw error("a string is never closed", hint: "add the closing \"", at: start)
            }
            let c = bytes[index]
            if c == UInt8(ascii: "\"") {
                flush(&self)
                index += 1
                return String(scalars)
            }
            if c < 0x20 {
                throw error(
                    c == 0x0A
                        ? "a string is never closed on its line"
                        : "a control character must be escaped inside a string",
                    hint: c == 0x0A ? "add the closing \" before the end of the line" : "write it as \\u00XX")
            }
            if c == UInt8(ascii: "\\") {
                flush(&self)
                index += 1
                guard index < bytes.count else { throw error("a string ends inside an escape") }
                let e = bytes[index]
                index += 1
                switch e {
                case UInt8(ascii: "\""): scalars.append("\"")
                case UInt8(ascii: "\\"): scalars.append("\\")
                case UInt8(ascii: "/"): scalars.append("/")
                case UInt8(ascii: "b"): scalars.append("\u{08}")
                case UInt8(ascii: "f"): scalars.append("\u{0C}")
                case UInt8(ascii: "n"): scalars.append("\n")
                case UInt8(ascii: "r"): scalars.append("\r")
                case UInt8(ascii: "t"): scalars.append("\t")
                case UInt8(ascii: "u"):
                    var code = try hex4()
                    if (0xD800...0xDBFF).contains(code) {
                        guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"),
                            bytes[index + 1] == UInt8(ascii: "u")
                        else {
                            throw error("a \\u escape holds half of a surrogate pair")
                        }
                        index += 2
                        let low = try hex4()
                        guard (0xDC00...0xDFFF).contains(low) else {
                            throw error("a \\u escape holds half of a surrogate pair")
                        }
                        code = 0x10000 + (code - 0xD800) << 10 + (low - 0xDC00)
                    } else if (0xDC00...0xDFFF).contains(code) {
                        throw error("a \\u escape holds half of a surrogate pair")
                    }
                    guard let scalar = Unicode.Scalar(code) else { throw error("a \\u escape is not a Unicode scalar") }
                    scalars.append(scalar)
                default:
                    index -= 2
                    throw error(
                        "'\\\(Character(UnicodeScalar(e)))' is not a JSON escape",
                        hint: "a backslash in a path is written \\\\ in JSON, and paths use '/' anyway")
                }
                runStart = index
                continue
            }
            index += 1
        }
    }

    mutating func hex4() throws -> UInt32 {
        guard bytes.count - index >= 4 else { throw error("a \\u escape needs four hex digits") }
        var v: UInt32 = 0
        for _ in 0..<4 {
            let c = bytes[index]
            let d: UInt32
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): d = UInt32(c - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): d = UInt32(c - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): d = UInt32(c - UInt8(ascii: "A") + 10)
            default: throw error("a \\u escape needs four hex digits")
            }
            v = v << 4 | d
            index += 1
        }
        return v
    }

    mutating func array(depth: Int, start: JSONPosition) throws -> JSONNode {
        index += 1
        var elements: [JSONNode] = []
        try skipSpace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            return JSONNode(.array([]), at: start)
        }
        while true {
            try skipSpace()
            elements.append(try value(depth: depth + 1))
            try skipSpace()
            guard index < bytes.count else {
                throw error("an array opened at \(start) is never closed", hint: "add the closing ]")
            }
            if bytes[index] == UInt8(ascii: ",") {
                let comma = position
                index += 1
                try skipSpace()
                if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
                    try trailingComma(at: comma)
                    index += 1
                    return JSONNode(.array(elements), at: start)
                }
                continue
            }
            if bytes[index] == UInt8(ascii: "]") {
                index += 1
                return JSONNode(.array(elements), at: start)
            }
            throw error(
                "expected ',' or ']' in an array but found \(describeHere())",
                hint: "separate array elements with commas")
        }
    }

    mutating func trailingComma(at comma: JSONPosition) throws {
        guard reader.allowsTrailingCommas else {
            throw error("a trailing comma is not allowed in strict JSON", at: comma)
        }
        warnings.append(
            .init(position: comma, message: "trailing comma accepted (strict JSON readers refuse it; remove it)"))
    }

    mutating func object(depth: Int, start: JSONPosition) throws -> JSONNode {
        index += 1
        var members: [JSONMember] = []
        var seen: [String: JSONPosition] = [:]
        try skipSpace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            return JSONNode(.object([]), at: start)
        }
        while true {
            try skipSpace()
            let keyPosition = position
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else {
                if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
                    throw error("expected a member name in quotes but found '}'")
                }
                throw error(
                    "expected a member name in double quotes but found \(describeHere())",
                    hint: "JSON object keys are strings: \"key\": value")
            }
            let key = try string()
            if let first = seen[key] {
                throw error(
                    "the key \"\(key)\" appears twice in one object (first at \(first))",
                    hint: "keep one of them", at: keyPosition)
            }
            seen[key] = keyPosition
            try skipSpace()
            try expect(UInt8(ascii: ":"), "':' after the member name \"\(key)\"")
            try skipSpace()
            let v = try value(depth: depth + 1)
            members.append(JSONMember(key: key, keyPosition: keyPosition, value: v))
            try skipSpace()
            guard index < bytes.count else {
                throw error("an object opened at \(start) is never closed", hint: "add the closing }")
            }
            if bytes[index] == UInt8(ascii: ",") {
                let comma = position
                index += 1
                try skipSpace()
                if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
                    try trailingComma(at: comma)
                    index += 1
                    return JSONNode(.object(members), at: start)
                }
                continue
            }
            if bytes[index] == UInt8(ascii: "}") {
                index += 1
                return JSONNode(.object(members), at: start)
            }
            throw error(
                "expected ',' or '}' after the member \"\(key)\" but found \(describeHere())",
                hint: "separate object members with commas")
        }
    }
}
