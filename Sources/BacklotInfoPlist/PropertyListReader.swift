import BacklotBasics
import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

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
/// ``PropertyListReader/maximumExpandedObjects``.
struct BinaryPlistParser {
    let bytes: [UInt8]
    let source: String
    var offsets: [Int] = []
    var refSize = 0
    /// Values built so far, shared references counted each time they are followed.
    var expanded = 0

    init(bytes: [UInt8], source: String) {
        self.bytes = bytes
        self.source = source
    }

    func fail(_ message: String) -> BacklotError {
        BacklotError(.invalidInput, "malformed binary property list: \(message)", context: source,
                     hint: "convert it with `plutil -convert xml1` and check it, or export it again")
    }

    func uint(at offset: Int, size: Int) throws -> UInt64 {
        guard size >= 1, size <= 8, offset >= 0, offset + size <= bytes.count else { throw fail("an integer at \(offset) runs past the end") }
        var v: UInt64 = 0
        for i in 0..<size { v = v << 8 | UInt64(bytes[offset + i]) }
        return v
    }

    mutating func parse() throws -> PlistValue {
        guard bytes.count >= 8 + 32 else { throw fail("too short for a trailer") }
        let t = bytes.count - 32
        let offsetSize = Int(bytes[t + 6])
        refSize = Int(bytes[t + 7])
        let count = try uint(at: t + 8, size: 8), top = try uint(at: t + 16, size: 8), table = try uint(at: t + 24, size: 8)
        guard (1...8).contains(offsetSize), (1...8).contains(refSize) else { throw fail("bad integer sizes in the trailer") }
        guard count >= 1, count <= UInt64(bytes.count), top < count, table >= 8,
              let tableEnd = try? CheckedInteger.add(table, try CheckedInteger.multiply(count, UInt64(offsetSize), "the offset table's size"),
                                                      "the offset table's end"),
              tableEnd <= UInt64(t) else { throw fail("the offset table does not fit in the file") }
        // count ≤ the file's size and table < its trailer: both fit Int.
        let objectCount = try convert(count, "the object count"), tableStart = try convert(table, "the offset table's offset")
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

    func length(_ marker: UInt8, at offset: Int) throws -> (count: Int, start: Int) {
        let low = Int(marker & 0x0F)
        guard low == 0x0F else { return (low, offset + 1) }
        guard offset + 1 < bytes.count, bytes[offset + 1] & 0xF0 == 0x10 else { throw fail("a length at \(offset) is not an integer") }
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
            throw fail("the objects expand to more than \(PropertyListReader.maximumExpandedObjects) values (shared references followed)")
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
                let high = try uint(at: at + 1, size: 8), low = try uint(at: at + 9, size: 8)
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
            return .data(Array(bytes[start..<start + n]))
        case 0x5:
            let (n, start) = try length(marker, at: at)
            guard start + n <= bytes.count else { throw fail("a string at \(at) runs past the end") }
            return .string(String(decoding: bytes[start..<start + n], as: UTF8.self))
        case 0x6:
            let (n, start) = try length(marker, at: at)
            guard start + 2 * n <= bytes.count else { throw fail("a string at \(at) runs past the end") }
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
                guard let k = key.string else { throw fail("a dictionary key at \(at) is \(key.typeName), not a string") }
                dict[k] = try object(referencedAt: start + (n + i) * refSize, depth: depth + 1)
            }
            return .dictionary(dict)
        default:
            throw fail("unsupported object 0x\(String(marker, radix: 16)) at \(at)")
        }
    }
}

/// The XML format, read with Foundation's XMLParser (libxml2) into a typed tree.
final class XMLPlistParser: NSObject, XMLParserDelegate {
    private enum Frame {
        case array([PlistValue])
        case dict([String: PlistValue], pendingKey: String?)
        case plist(PlistValue?)
    }
    private var stack: [Frame] = []
    private var text = ""
    private var failure: String?
    private let source: String
    private weak var parser: XMLParser?

    private init(source: String) { self.source = source }

    static func parse(_ bytes: [UInt8], source: String) throws -> PlistValue {
        // Foundation's XMLParser traps on names and text that are not valid UTF-8 (libxml2 hands
        // them on); property lists are UTF-8, so anything else is refused before parsing.
        guard String(validating: bytes, as: UTF8.self) != nil else {
            throw BacklotError(.invalidInput, "not a valid XML or binary property list: the text is not valid UTF-8",
                               context: source, hint: "save it as UTF-8, or convert it with `plutil -convert xml1`")
        }
        let reader = XMLPlistParser(source: source)
        let parser = XMLParser(data: Data(bytes))
        parser.shouldResolveExternalEntities = false
        parser.delegate = reader
        reader.parser = parser
        let ok = parser.parse()
        let position = "line \(parser.lineNumber), column \(parser.columnNumber)"
        if let failure = reader.failure {
            throw BacklotError(.invalidInput, "malformed property list: \(failure)", context: "\(source) (\(position))")
        }
        guard ok else {
            throw BacklotError(.invalidInput, "not a valid XML or binary property list: \(parser.parserError.map { "\($0.localizedDescription)" } ?? "parse error")",
                               context: "\(source) (\(position))", hint: "check it with `plutil -lint` or an XML validator")
        }
        guard case .plist(let root?)? = reader.stack.first else {
            throw BacklotError(.invalidInput, "the file has no <plist> element with a value", context: source)
        }
        return root
    }

    private func fail(_ message: String) {
        if failure == nil { failure = message }
        parser?.abortParsing()
    }

    private func add(_ value: PlistValue) {
        guard let top = stack.popLast() else { return fail("a value outside <plist>") }
        switch top {
        case .array(var a):
            a.append(value)
            stack.append(.array(a))
        case .dict(var d, let key?):
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

    func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?, attributes: [String: String] = [:]) {
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

    func parser(_ parser: XMLParser, foundCharacters string: String) { text += string }

    func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
        let t = text
        text = ""
        switch name {
        case "plist": break
        case "array":
            guard case .array(let a)? = stack.popLast() else { return fail("</array> does not close an <array>") }
            add(.array(a))
        case "dict":
            guard case .dict(let d, let pending)? = stack.popLast() else { return fail("</dict> does not close a <dict>") }
            if let pending { return fail("the key \"\(pending)\" has no value") }
            add(.dictionary(d))
        case "key":
            guard case .dict(let d, nil)? = stack.popLast() else { return fail("<key>\(t)</key> outside a <dict>, or two keys in a row") }
            stack.append(.dict(d, pendingKey: t))
        case "string": add(.string(t))
        case "integer":
            let s = t.trimmingCharacters(in: .whitespacesAndNewlines)
            if let v = Int64(s) { add(.integer(v)) } else if let u = UInt64(s) { add(.unsignedInteger(u)) } else { fail("\"\(s)\" is not an integer") }
        case "real":
            guard let v = Double(t.trimmingCharacters(in: .whitespacesAndNewlines)) else { return fail("\"\(t)\" is not a real number") }
            add(.real(v))
        case "true": add(.bool(true))
        case "false": add(.bool(false))
        case "date":
            guard let d = ISO8601DateFormatter().date(from: t.trimmingCharacters(in: .whitespacesAndNewlines)) else { return fail("\"\(t)\" is not an ISO 8601 date") }
            add(.date(d))
        case "data":
            guard let d = Data(base64Encoded: t.filter { !$0.isWhitespace }) else { return fail("<data> is not base64") }
            add(.data(Array(d)))
        default: break
        }
    }
}
