import BacklotBasics
import Foundation

/// Reads XML (`<?xml … <plist>`) and binary (`bplist00`) property lists into ``PlistValue``.
///
/// Both readers are written to keep types exact (booleans stay booleans, integers keep all 64
/// bits) and to fail with the reason and the place on malformed input.
///
/// ```swift
/// let root = try PropertyListReader.read(path: "Info.plist")
/// let url = root.dictionary?["BAManifestURL"]?.string
/// ```
public enum PropertyListReader {
    /// How deeply arrays and dictionaries may nest, in either form.
    public static let maximumDepth = 64
    /// How many values a binary property list may expand to when its shared references are
    /// followed (a few hundred bytes of references to references can otherwise stand for billions).
    public static let maximumExpandedObjects = 1 << 18
    /// How many bytes of data and strings a binary property list may expand to when its shared
    /// references are followed: each reference to one data object is a copy of it, so 2^18
    /// one-byte references to a 1 MiB object would otherwise stand for 256 GiB.
    public static let maximumExpandedBytes = 64 << 20

    /// Reads a property-list file of either kind.
    /// - Throws: ``BacklotError/Code/invalidInput`` naming the problem; ``BacklotError/Code/io``.
    public static func read(path: String) throws -> PlistValue {
        try read(try FileDescriptor.readWholeFile(path, atMost: 64 << 20, what: "the property list"), source: path)
    }

    /// Reads property-list bytes of either kind.
    public static func read(_ bytes: [UInt8], source: String) throws -> PlistValue {
        if bytes.starts(with: Array("bplist00".utf8)) {
            var parser = BinaryPlistParser(bytes: bytes, source: source)
            return try parser.parse()
        }
        return try XMLPlistParser.parse(bytes, source: source)
    }
}

/// The binary format (`bplist00`): objects addressed through an offset table described by a
/// 32-byte trailer. Every offset and count is checked against the file before use, every number
/// read from the file is converted through ``CheckedInteger``, and the values an object expands
/// to (references are shared, so the tree can be far larger than the file) are counted against
/// ``PropertyListReader/maximumExpandedObjects``, and the bytes of the data and strings they copy
/// against ``PropertyListReader/maximumExpandedBytes``.
struct BinaryPlistParser {
    let bytes: [UInt8]
    let source: String
    var offsets: [Int] = []
    var refSize = 0
    /// Values built so far, shared references counted each time they are followed.
    var expanded = 0
    /// Bytes of data and strings built so far, counted the same way.
    var expandedBytes = 0

    init(bytes: [UInt8], source: String) {
        self.bytes = bytes
        self.source = source
    }

    func fail(_ message: String) -> BacklotError {
        BacklotError(
            .invalidInput, "malformed binary property list: \(message)", context: source,
            hint: "convert it with `plutil -convert xml1` and check it, or export it again")
    }

    func uint(at offset: Int, size: Int) throws -> UInt64 {
        guard size >= 1, size <= 8, offset >= 0, offset + size <= bytes.count else {
            throw fail("an integer at \(offset) runs past the end")
        }
        var v: UInt64 = 0
        for i in 0..<size { v = v << 8 | UInt64(bytes[offset + i]) }
        return v
    }

    mutating func parse() throws -> PlistValue {
        guard bytes.count >= 8 + 32 else { throw fail("too short for a trailer") }
        let t = bytes.count - 32
        let offsetSize = Int(bytes[t + 6])
        refSize = Int(bytes[t + 7])
        let count = try uint(at: t + 8, size: 8)
        let top = try uint(at: t + 16, size: 8)
        let table = try uint(at: t + 24, size: 8)
        guard (1...8).contains(offsetSize), (1...8).contains(refSize) else {
            throw fail("bad integer sizes in the trailer")
        }
        guard count >= 1, count <= UInt64(bytes.count), top < count, table >= 8,
            let tableEnd = try? CheckedInteger.add(
                table, try CheckedInteger.multiply(count, UInt64(offsetSize), "the offset table's size"),
                "the offset table's end"),
            tableEnd <= UInt64(t)
        else { throw fail("the offset table does not fit in the file") }
        // count ≤ the file's size and table < its trailer: both fit Int.
        let objectCount = try convert(count, "the object count")
        let tableStart = try convert(table, "the offset table's offset")
        offsets = try (0..<objectCount).map { i in
            let o = try uint(at: tableStart + i * offsetSize, size: offsetSize)
            guard o >= 8, o < table else { throw fail("object \(i) lies outside the object area") }
            return Int(o)
        }
        return try object(try convert(top, "the top object's reference"), depth: 0)
    }

    /// A number read from the file as an `Int`, or the error naming it.
    func convert(_ value: UInt64, _ what: String) throws -> Int {
        do {
            return try CheckedInteger.convert(value, to: Int.self, what, context: source)
        } catch {
            throw fail("\(what) is \(value), too large")
        }
    }

    /// Reads the object reference at `offset` (refSize bytes) and the object it names.
    mutating func object(referencedAt offset: Int, depth: Int) throws -> PlistValue {
        let ref = try uint(at: offset, size: refSize)
        guard ref < UInt64(offsets.count) else { throw fail("a reference to object \(ref) is out of range") }
        return try object(Int(ref), depth: depth)
    }

    /// Counts `count` more bytes of data or string built against ``PropertyListReader/maximumExpandedBytes``.
    mutating func expand(bytes count: Int) throws {
        expandedBytes += count  // each count is at most the file's size, the total at most the budget
        guard expandedBytes <= PropertyListReader.maximumExpandedBytes else {
            throw fail(
                "the data and strings expand to more than \(PropertyListReader.maximumExpandedBytes >> 20) MiB (shared references followed)"
            )
        }
    }

    func length(_ marker: UInt8, at offset: Int) throws -> (count: Int, start: Int) {
        let low = Int(marker & 0x0F)
        guard low == 0x0F else { return (low, offset + 1) }
        guard offset + 1 < bytes.count, bytes[offset + 1] & 0xF0 == 0x10 else {
            throw fail("a length at \(offset) is not an integer")
        }
        let size = 1 << Int(bytes[offset + 1] & 0x0F)
        let n = try uint(at: offset + 2, size: size)
        guard n <= UInt64(bytes.count) else { throw fail("a length at \(offset) is larger than the file") }
        return (try convert(n, "a length at \(offset)"), offset + 2 + size)
    }

    mutating func object(_ ref: Int, depth: Int) throws -> PlistValue {
        guard depth < PropertyListReader.maximumDepth else {
            throw fail("objects nest more than \(PropertyListReader.maximumDepth) deep (or refer to themselves)")
        }
        guard ref >= 0, ref < offsets.count else { throw fail("a reference to object \(ref) is out of range") }
        expanded += 1
        guard expanded <= PropertyListReader.maximumExpandedObjects else {
            throw fail(
                "the objects expand to more than \(PropertyListReader.maximumExpandedObjects) values (shared references followed)"
            )
        }
        let at = offsets[ref]
        let marker = bytes[at]
        switch marker >> 4 {
        case 0x0:
            switch marker {
            case 0x08: return .bool(false)
            case 0x09: return .bool(true)
            default: throw fail("unsupported object 0x\(String(marker, radix: 16)) at \(at)")
            }
        case 0x1:
            let size = 1 << Int(marker & 0x0F)
            if size == 16 {
                let high = try uint(at: at + 1, size: 8)
                let low = try uint(at: at + 9, size: 8)
                guard high == 0 else { throw fail("an integer at \(at) does not fit in 64 bits") }
                return low > UInt64(Int64.max) ? .unsignedInteger(low) : .integer(Int64(low))
            }
            guard size <= 8 else { throw fail("an integer at \(at) has \(size) bytes") }
            let v = try uint(at: at + 1, size: size)
            return .integer(size == 8 ? Int64(bitPattern: v) : Int64(v))
        case 0x2:
            let size = 1 << Int(marker & 0x0F)
            let v = try uint(at: at + 1, size: size)
            if size == 4 { return .real(Double(Float(bitPattern: UInt32(v)))) }
            guard size == 8 else { throw fail("a real at \(at) has \(size) bytes") }
            return .real(Double(bitPattern: v))
        case 0x3:
            let v = try uint(at: at + 1, size: 8)
            return .date(Date(timeIntervalSinceReferenceDate: Double(bitPattern: v)))
        case 0x4:
            let (n, start) = try length(marker, at: at)
            guard start + n <= bytes.count else { throw fail("data at \(at) runs past the end") }
            try expand(bytes: n)
            return .data(Array(bytes[start..<start + n]))
        case 0x5:
            let (n, start) = try length(marker, at: at)
            guard start + n <= bytes.count else { throw fail("a string at \(at) runs past the end") }
            try expand(bytes: n)
            return .string(String(decoding: bytes[start..<start + n], as: UTF8.self))
        case 0x6:
            let (n, start) = try length(marker, at: at)
            guard start + 2 * n <= bytes.count else { throw fail("a string at \(at) runs past the end") }
            try expand(bytes: 2 * n)
            let units = (0..<n).map { UInt16(bytes[start + 2 * $0]) << 8 | UInt16(bytes[start + 2 * $0 + 1]) }
            return .string(String(decoding: units, as: UTF16.self))
        case 0xA:
            let (n, start) = try length(marker, at: at)
            guard start + n * refSize <= bytes.count else { throw fail("an array at \(at) runs past the end") }
            var elements: [PlistValue] = []
            for i in 0..<n { elements.append(try object(referencedAt: start + i * refSize, depth: depth + 1)) }
            return .array(elements)
        case 0xD:
            let (n, start) = try length(marker, at: at)
            guard start + 2 * n * refSize <= bytes.count else { throw fail("a dictionary at \(at) runs past the end") }
            var dict: [String: PlistValue] = [:]
            for i in 0..<n {
                let key = try object(referencedAt: start + i * refSize, depth: depth + 1)
                guard let k = key.string else {
                    throw fail("a dictionary key at \(at) is \(key.typeName), not a string")
                }
                dict[k] = try object(referencedAt: start + (n + i) * refSize, depth: depth + 1)
            }
            return .dictionary(dict)
        default:
            throw fail("unsupported object 0x\(String(marker, radix: 16)) at \(at)")
        }
    }
}

/// The XML format: the subset property lists use, scanned by ``PlistXMLScanner`` into a typed tree.
///
/// Foundation's XMLParser is not used: on crafted input it trapped (names that are not UTF-8) and
/// read through a null pointer (a processing instruction without data), both found by fuzzing.
final class XMLPlistParser {
    private enum Frame {
        case array([PlistValue])
        case dict([String: PlistValue], pendingKey: String?)
        case plist(PlistValue?)
    }
    private var stack: [Frame] = []
    private var text = ""
    /// Elements copied to a new buffer by appends (see ``Statistics``).
    private(set) var copiedElements = 0
    /// The first rule broken, which stops the scan.
    private(set) var failure: String?
    private let source: String

    private init(source: String) { self.source = source }

    static func parse(_ bytes: [UInt8], source: String) throws -> PlistValue {
        try parseCounting(bytes, source: source).root
    }

    /// What reading cost, for the test that keeps it linear: the elements copied when arrays grew
    /// (a copy of the whole array on every append would make this quadratic) and the bytes scanned.
    struct Statistics {
        let root: PlistValue
        let copiedElements: Int
        let scannedBytes: Int
    }

    static func parseCounting(_ bytes: [UInt8], source: String) throws -> Statistics {
        // Property lists are UTF-8; anything else is refused before scanning.
        guard String(validating: bytes, as: UTF8.self) != nil else {
            throw BacklotError(
                .invalidInput, "not a valid XML or binary property list: the text is not valid UTF-8",
                context: source, hint: "save it as UTF-8, or convert it with `plutil -convert xml1`")
        }
        let reader = XMLPlistParser(source: source)
        var scanner = PlistXMLScanner(bytes: bytes)
        let syntaxError = scanner.scan(into: reader)
        let position = "line \(scanner.line), column \(scanner.column)"
        if let failure = reader.failure {
            throw BacklotError(.invalidInput, "malformed property list: \(failure)", context: "\(source) (\(position))")
        }
        if let syntaxError {
            throw BacklotError(
                .invalidInput, "not a valid XML or binary property list: \(syntaxError)",
                context: "\(source) (\(position))", hint: "check it with `plutil -lint` or an XML validator")
        }
        guard case .plist(let root?)? = reader.stack.first else {
            throw BacklotError(.invalidInput, "the file has no <plist> element with a value", context: source)
        }
        return Statistics(root: root, copiedElements: reader.copiedElements, scannedBytes: scanner.index)
    }

    private func fail(_ message: String) {
        if failure == nil { failure = message }
    }

    private func add(_ value: PlistValue) {
        guard var top = stack.popLast() else { return fail("a value outside <plist>") }
        switch top {
        case .array(var a):
            // drop the frame's reference, so that the append is in place (linear, not a copy per element)
            top = .plist(nil)
            let before = a.withUnsafeBufferPointer { UInt(bitPattern: $0.baseAddress) }
            a.append(value)
            if a.withUnsafeBufferPointer({ UInt(bitPattern: $0.baseAddress) }) != before {
                copiedElements += a.count - 1
            }
            stack.append(.array(a))
        case .dict(var d, let key?):
            top = .plist(nil)  // the same for the dictionary
            d[key] = value
            stack.append(.dict(d, pendingKey: nil))
        case .dict:
            fail("a value in a <dict> without a <key> before it")
        case .plist(nil):
            stack.append(.plist(value))
        case .plist:
            fail("more than one value in <plist>")
        }
    }

    func didStartElement(_ name: String) {
        text = ""
        if name == "array" || name == "dict", stack.count > PropertyListReader.maximumDepth {
            return fail("arrays and dictionaries nest more than \(PropertyListReader.maximumDepth) deep")
        }
        switch name {
        case "plist": stack.append(.plist(nil))
        case "array": stack.append(.array([]))
        case "dict": stack.append(.dict([:], pendingKey: nil))
        case "key", "string", "integer", "real", "true", "false", "date", "data": break
        default: fail("unknown element <\(name)>")
        }
    }

    func foundCharacters(_ string: String) { text += string }

    func didEndElement(_ name: String) {
        let t = text
        text = ""
        switch name {
        case "plist": break
        case "array":
            guard case .array(let a)? = stack.popLast() else { return fail("</array> does not close an <array>") }
            add(.array(a))
        case "dict":
            guard case .dict(let d, let pending)? = stack.popLast() else {
                return fail("</dict> does not close a <dict>")
            }
            if let pending { return fail("the key \"\(pending)\" has no value") }
            add(.dictionary(d))
        case "key":
            guard case .dict(let d, nil)? = stack.popLast() else {
                return fail("<key>\(t)</key> outside a <dict>, or two keys in a row")
            }
            stack.append(.dict(d, pendingKey: t))
        case "string": add(.string(t))
        case "integer":
            let s = t.trimmingCharacters(in: .whitespacesAndNewlines)
            if let v = Int64(s) {
                add(.integer(v))
            } else if let u = UInt64(s) {
                add(.unsignedInteger(u))
            } else {
                fail("\"\(s.prefix(64))\" is not an integer")
            }
        case "real":
            guard let v = Double(t.trimmingCharacters(in: .whitespacesAndNewlines)) else {
                return fail("\"\(t.prefix(64))\" is not a real number")
            }
            add(.real(v))
        case "true": add(.bool(true))
        case "false": add(.bool(false))
        case "date":
            guard let d = ISO8601DateFormatter().date(from: t.trimmingCharacters(in: .whitespacesAndNewlines)) else {
                return fail("\"\(t.prefix(64))\" is not an ISO 8601 date")
            }
            add(.date(d))
        case "data":
            guard let d = Data(base64Encoded: t.filter { !$0.isWhitespace }) else {
                return fail("<data> is not base64")
            }
            add(.data(Array(d)))
        default: break
        }
    }
}

/// A scanner for the XML that property lists are written in: an optional `<?xml …?>`
/// declaration, a `<!DOCTYPE …>` without an internal subset, comments, elements with attributes,
/// text with the five predefined entities and character references, and CDATA sections.
///
/// Everything else XML allows (other processing instructions, entity declarations, external
/// entities) is refused, so there is nothing to expand or fetch. It checks that tags nest and
/// match, and stops at the first error or at the first rule the receiver reports broken.
struct PlistXMLScanner {
    let bytes: [UInt8]
    var index = 0
    private(set) var line = 1
    private var lineStart = 0
    /// Open elements, innermost last.
    private var open: [String] = []
    /// How deeply elements may nest (containers are bounded again by the receiver).
    static let maximumDepth = 2 * PropertyListReader.maximumDepth + 8

    init(bytes: [UInt8]) { self.bytes = bytes }

    /// The column of the scan position, in bytes from 1.
    var column: Int { index - lineStart + 1 }

    /// Scans everything; returns the syntax error, or nil.
    mutating func scan(into receiver: XMLPlistParser) -> String? {
        do {
            try scanDocument(receiver)
            return nil
        } catch {
            return error.message
        }
    }

    struct SyntaxError: Error {
        let message: String
    }

    private func error(_ message: String) -> SyntaxError { SyntaxError(message: message) }

    private func at(_ literal: String) -> Bool {
        let l = Array(literal.utf8)
        return bytes.count - index >= l.count && bytes[index..<index + l.count].elementsEqual(l)
    }

    private mutating func advance(_ n: Int = 1) {
        for _ in 0..<n where index < bytes.count {
            if bytes[index] == 0x0A {
                line += 1
                lineStart = index + 1
            }
            index += 1
        }
    }

    /// Moves past the next `terminator`, or fails naming `what`.
    private mutating func skip(past terminator: String, _ what: String) throws(SyntaxError) {
        while index < bytes.count {
            if at(terminator) {
                advance(terminator.utf8.count)
                return
            }
            advance()
        }
        throw error("\(what) is never closed")
    }

    private static func isSpace(_ b: UInt8) -> Bool { b == 0x20 || b == 0x09 || b == 0x0A || b == 0x0D }

    private mutating func skipSpace() {
        while index < bytes.count, Self.isSpace(bytes[index]) { advance() }
    }

    private static func isNameStart(_ b: UInt8) -> Bool {
        (b >= UInt8(ascii: "a") && b <= UInt8(ascii: "z")) || (b >= UInt8(ascii: "A") && b <= UInt8(ascii: "Z"))
            || b == UInt8(ascii: "_") || b == UInt8(ascii: ":")
    }

    private static func isName(_ b: UInt8) -> Bool {
        isNameStart(b) || (b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9")) || b == UInt8(ascii: "-")
            || b == UInt8(ascii: ".")
    }

    private mutating func name() throws(SyntaxError) -> String {
        guard index < bytes.count, Self.isNameStart(bytes[index]) else {
            throw error("expected an element or attribute name")
        }
        let start = index
        while index < bytes.count, Self.isName(bytes[index]) { advance() }
        return String(decoding: bytes[start..<index], as: UTF8.self)
    }

    /// Comments, white space and (before the root) a DOCTYPE.
    private mutating func skipMisc(allowDoctype: Bool) throws(SyntaxError) {
        while true {
            skipSpace()
            if at("<!--") {
                advance(4)
                try skip(past: "-->", "a comment")
            } else if at("<!DOCTYPE") {
                guard allowDoctype else { throw error("a DOCTYPE after the root element") }
                advance(9)
                while index < bytes.count, bytes[index] != UInt8(ascii: ">") {
                    if bytes[index] == UInt8(ascii: "[") {
                        throw error("a DOCTYPE with an internal subset (entity declarations are not allowed)")
                    }
                    if bytes[index] == UInt8(ascii: "\"") || bytes[index] == UInt8(ascii: "'") {
                        let quote = String(UnicodeScalar(bytes[index]))
                        advance()
                        try skip(past: quote, "a quoted DOCTYPE identifier")
                        continue
                    }
                    advance()
                }
                guard index < bytes.count else { throw error("the DOCTYPE is never closed") }
                advance()
            } else if at("<?") {
                throw error("a processing instruction (only the <?xml …?> declaration, at the very start, is allowed)")
            } else {
                return
            }
        }
    }

    private mutating func scanDocument(_ receiver: XMLPlistParser) throws(SyntaxError) {
        if at("\u{FEFF}") { advance(3) }
        if at("<?xml") && bytes.count - index > 5
            && (Self.isSpace(bytes[index + 5]) || bytes[index + 5] == UInt8(ascii: "?"))
        {
            advance(5)
            try skip(past: "?>", "the XML declaration")
        }
        try skipMisc(allowDoctype: true)
        guard index < bytes.count, bytes[index] == UInt8(ascii: "<") else {
            throw error(index < bytes.count ? "text before the root element" : "no root element")
        }
        try element(receiver)
        try skipMisc(allowDoctype: false)
        guard index == bytes.count else { throw error("content after the root element") }
    }

    /// The root element and everything in it (a loop over tags, not recursion).
    private mutating func element(_ receiver: XMLPlistParser) throws(SyntaxError) {
        var text: [UInt8] = []
        func flush(_ receiver: XMLPlistParser) {
            if !text.isEmpty {
                receiver.foundCharacters(String(decoding: text, as: UTF8.self))
                text.removeAll(keepingCapacity: true)
            }
        }
        repeat {
            guard receiver.failure == nil else { return }
            guard index < bytes.count else { throw error("the element <\(open.last ?? "")> is never closed") }
            let b = bytes[index]
            if b == UInt8(ascii: "<") {
                if at("<!--") {
                    advance(4)
                    try skip(past: "-->", "a comment")
                } else if at("<![CDATA[") {
                    advance(9)
                    let start = index
                    try skip(past: "]]>", "a CDATA section")
                    text += bytes[start..<index - 3]
                } else if at("<?") || at("<!") {
                    throw error("a processing instruction or declaration inside an element")
                } else if at("</") {
                    advance(2)
                    let n = try name()
                    skipSpace()
                    guard index < bytes.count, bytes[index] == UInt8(ascii: ">") else {
                        throw error("expected '>' to end </\(n)")
                    }
                    advance()
                    guard n == open.last else { throw error("</\(n)> does not close <\(open.last ?? "")>") }
                    flush(receiver)
                    open.removeLast()
                    receiver.didEndElement(n)
                } else {
                    advance()
                    let n = try name()
                    let empty = try attributes()
                    guard open.count < Self.maximumDepth else {
                        throw error("elements nest more than \(Self.maximumDepth) deep")
                    }
                    flush(receiver)
                    receiver.didStartElement(n)
                    if empty {
                        receiver.didEndElement(n)
                    } else {
                        open.append(n)
                    }
                }
            } else if b == UInt8(ascii: "&") {
                text += Array(try reference().utf8)
            } else if b == UInt8(ascii: ">") && at("]]>") {
                throw error("']]>' outside a CDATA section")
            } else {
                text.append(b)
                advance()
            }
        } while !open.isEmpty
        flush(receiver)
    }

    /// Attributes up to `>` or `/>`; returns whether the element is empty (`/>`).
    private mutating func attributes() throws(SyntaxError) -> Bool {
        var seen = Set<String>()
        while true {
            let hadSpace = index < bytes.count && Self.isSpace(bytes[index])
            skipSpace()
            guard index < bytes.count else { throw error("a tag is never closed") }
            if bytes[index] == UInt8(ascii: ">") {
                advance()
                return false
            }
            if at("/>") {
                advance(2)
                return true
            }
            guard hadSpace else { throw error("expected white space before an attribute") }
            let n = try name()
            guard seen.insert(n).inserted else { throw error("the attribute \(n) appears twice") }
            skipSpace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "=") else {
                throw error("expected '=' after the attribute \(n)")
            }
            advance()
            skipSpace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") || bytes[index] == UInt8(ascii: "'") else {
                throw error("the value of the attribute \(n) is not quoted")
            }
            let quote = bytes[index]
            advance()
            while index < bytes.count, bytes[index] != quote {
                if bytes[index] == UInt8(ascii: "<") { throw error("'<' in the value of the attribute \(n)") }
                advance()
            }
            guard index < bytes.count else { throw error("the value of the attribute \(n) is never closed") }
            advance()
        }
    }

    /// `&lt;` `&gt;` `&amp;` `&quot;` `&apos;`, `&#N;` and `&#xH;` (Unicode scalars only).
    private mutating func reference() throws(SyntaxError) -> String {
        advance()
        let start = index
        while index < bytes.count, bytes[index] != UInt8(ascii: ";"), index - start < 12 { advance() }
        guard index < bytes.count, bytes[index] == UInt8(ascii: ";") else {
            throw error("an entity reference is not closed with ';'")
        }
        let body = String(decoding: bytes[start..<index], as: UTF8.self)
        advance()
        switch body {
        case "lt": return "<"
        case "gt": return ">"
        case "amp": return "&"
        case "quot": return "\""
        case "apos": return "'"
        default: break
        }
        var code: UInt32?
        if body.hasPrefix("#x") {
            let hex = body.dropFirst(2)
            if !hex.isEmpty, hex.count <= 8, hex.allSatisfy(\.isHexDigit) { code = UInt32(hex, radix: 16) }
        } else if body.hasPrefix("#") {
            let digits = body.dropFirst().drop { $0 == "0" }  // XML allows leading zeros
            code = body.count > 1 ? (digits.isEmpty ? 0 : CheckedInteger.parse(digits, as: UInt32.self)) : nil
        } else {
            throw error(
                "the entity &\(body); is not defined (only &lt; &gt; &amp; &quot; &apos; and character references)")
        }
        guard let code, code != 0, let scalar = Unicode.Scalar(code) else {
            throw error("&\(body); is not a valid character reference")
        }
        return String(Character(scalar))
    }
}
