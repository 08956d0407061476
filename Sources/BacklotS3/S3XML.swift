import BacklotBasics

/// One element of an S3 XML answer: its local name (a namespace prefix dropped), its text, its children.
public struct S3XMLElement: Sendable, Hashable {
    public let name: String
    /// The element's own text, entities decoded (for `<Key>a&amp;b</Key>`, `a&b`).
    public let text: String
    public let children: [S3XMLElement]

    /// The first child named `name`.
    public func child(_ name: String) -> S3XMLElement? { children.first { $0.name == name } }
    /// Every child named `name`, in order.
    public func children(named name: String) -> [S3XMLElement] { children.filter { $0.name == name } }
    /// The text of the first child named `name`.
    public func value(_ name: String) -> String? { child(name)?.text }
}

/// A small XML reader for the few documents S3 answers with (errors, listings, multipart results).
///
/// The input is treated as hostile: it is bounded by the caller (the response body limit), the
/// nesting depth and the number of elements are bounded here, a document type declaration
/// (and with it every entity but the five predefined ones and character references) is refused,
/// and everything it builds is at most linear in the input's size. Attributes, comments and
/// processing instructions are skipped.
///
/// ```swift
/// let root = try S3XML.parse(Array("<Error><Code>NoSuchKey</Code></Error>".utf8))
/// root.value("Code")   // "NoSuchKey"
/// ```
public enum S3XML {
    /// The deepest nesting accepted.
    public static let maximumDepth = 32
    /// The most elements accepted in one document.
    public static let maximumElements = 1 << 20

    /// Parses `bytes` into its root element.
    /// - Throws: ``BacklotError/Code/invalidInput`` for anything that is not well-formed (or is over a bound), with the byte offset.
    public static func parse(_ bytes: [UInt8]) throws -> S3XMLElement {
        var reader = Reader(bytes: bytes)
        return try reader.document()
    }

    private struct Open {
        var name: String
        var text: [UInt8] = []
        var children: [S3XMLElement] = []
    }

    private struct Reader {
        let bytes: [UInt8]
        var i = 0
        var elements = 0

        init(bytes: [UInt8]) { self.bytes = bytes }

        func fail(_ why: String) -> BacklotError {
            BacklotError(
                .invalidInput, "the object store's XML answer is not well-formed: \(why)", context: "byte \(i)")
        }

        func starts(with text: String) -> Bool {
            let t = Array(text.utf8)
            return i + t.count <= bytes.count && bytes[i..<(i + t.count)].elementsEqual(t)
        }

        /// Moves past the next `terminator`.
        mutating func skip(past terminator: String) throws {
            let t = Array(terminator.utf8)
            while i + t.count <= bytes.count {
                if bytes[i..<(i + t.count)].elementsEqual(t) {
                    i += t.count
                    return
                }
                i += 1
            }
            throw fail("\(terminator) expected")
        }

        mutating func skipSpace() {
            while i < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[i]) { i += 1 }
        }

        mutating func document() throws -> S3XMLElement {
            if starts(with: "\u{FEFF}") { i += 3 }
            var stack: [Open] = []
            var root: S3XMLElement?
            while true {
                if stack.isEmpty {
                    skipSpace()
                    if i >= bytes.count { break }
                    guard bytes[i] == UInt8(ascii: "<") else { throw fail("text outside the root element") }
                    guard root == nil || starts(with: "<?") || starts(with: "<!--") else {
                        throw fail("a second root element")
                    }
                }
                guard i < bytes.count else { throw fail("the document ends inside <\(stack.last?.name ?? "")>") }
                if bytes[i] != UInt8(ascii: "<") {
                    try text(into: &stack[stack.count - 1].text)
                    continue
                }
                if starts(with: "<?") {
                    try skip(past: "?>")
                    continue
                }
                if starts(with: "<!--") {
                    try skip(past: "-->")
                    continue
                }
                if starts(with: "<![CDATA[") {
                    guard !stack.isEmpty else { throw fail("CDATA outside the root element") }
                    i += 9
                    let start = i
                    try skip(past: "]]>")
                    stack[stack.count - 1].text.append(contentsOf: bytes[start..<(i - 3)])
                    continue
                }
                if starts(with: "<!") { throw fail("document type declarations are not accepted") }
                if starts(with: "</") {
                    i += 2
                    let name = try self.name()
                    skipSpace()
                    guard i < bytes.count, bytes[i] == UInt8(ascii: ">") else {
                        throw fail("> expected after </\(name)")
                    }
                    i += 1
                    guard let open = stack.popLast(), open.name == name else {
                        throw fail("</\(name)> closes nothing open")
                    }
                    let element = S3XMLElement(
                        name: name, text: String(decoding: open.text, as: UTF8.self), children: open.children)
                    if stack.isEmpty { root = element } else { stack[stack.count - 1].children.append(element) }
                    continue
                }
                // A start tag.
                i += 1
                let name = try self.name()
                elements += 1
                guard elements <= S3XML.maximumElements else {
                    throw fail("more than \(S3XML.maximumElements) elements")
                }
                let selfClosing = try attributes()
                if selfClosing {
                    let element = S3XMLElement(name: name, text: "", children: [])
                    if stack.isEmpty { root = element } else { stack[stack.count - 1].children.append(element) }
                } else {
                    guard stack.count < S3XML.maximumDepth else {
                        throw fail("nested deeper than \(S3XML.maximumDepth) elements")
                    }
                    stack.append(Open(name: name))
                }
            }
            guard let root else { throw fail("no root element") }
            return root
        }

        /// An element name, its namespace prefix dropped.
        mutating func name() throws -> String {
            let start = i
            while i < bytes.count,
                !([0x20, 0x09, 0x0A, 0x0D, UInt8(ascii: ">"), UInt8(ascii: "/"), UInt8(ascii: "=")].contains(bytes[i]))
            {
                guard i - start < 256 else { throw fail("an element name longer than 256 bytes") }
                i += 1
            }
            guard i > start else { throw fail("an element name expected") }
            var name = bytes[start..<i]
            if let colon = name.lastIndex(of: UInt8(ascii: ":")) { name = name[(colon + 1)...] }
            return String(decoding: name, as: UTF8.self)
        }

        /// Skips the attributes of a start tag; returns whether it ends with `/>`.
        mutating func attributes() throws -> Bool {
            while i < bytes.count {
                switch bytes[i] {
                case UInt8(ascii: ">"):
                    i += 1
                    return false
                case UInt8(ascii: "/"):
                    guard i + 1 < bytes.count, bytes[i + 1] == UInt8(ascii: ">") else { throw fail("/> expected") }
                    i += 2
                    return true
                case UInt8(ascii: "\""), UInt8(ascii: "'"):
                    let quote = bytes[i]
                    i += 1
                    while i < bytes.count, bytes[i] != quote { i += 1 }
                    guard i < bytes.count else { throw fail("an attribute value is not closed") }
                    i += 1
                case UInt8(ascii: "<"):
                    throw fail("< inside a tag")
                default:
                    i += 1
                }
            }
            throw fail("the document ends inside a tag")
        }

        /// Character data up to the next `<`, entities decoded, appended to `out`.
        mutating func text(into out: inout [UInt8]) throws {
            while i < bytes.count, bytes[i] != UInt8(ascii: "<") {
                if bytes[i] != UInt8(ascii: "&") {
                    out.append(bytes[i])
                    i += 1
                    continue
                }
                let start = i + 1
                var end = start
                while end < bytes.count, end - start < 12, bytes[end] != UInt8(ascii: ";") { end += 1 }
                guard end < bytes.count, bytes[end] == UInt8(ascii: ";") else { throw fail("an entity is not closed") }
                let entity = String(decoding: bytes[start..<end], as: UTF8.self)
                switch entity {
                case "lt": out.append(UInt8(ascii: "<"))
                case "gt": out.append(UInt8(ascii: ">"))
                case "amp": out.append(UInt8(ascii: "&"))
                case "quot": out.append(UInt8(ascii: "\""))
                case "apos": out.append(UInt8(ascii: "'"))
                default:
                    let scalar: UInt32?
                    if entity.hasPrefix("#x") || entity.hasPrefix("#X") {
                        scalar = UInt32(entity.dropFirst(2), radix: 16)
                    } else if entity.hasPrefix("#") {
                        scalar = CheckedInteger.parse(entity.dropFirst(), as: UInt32.self)
                    } else {
                        throw fail("unknown entity &\(entity);")
                    }
                    guard let scalar, scalar != 0, let u = Unicode.Scalar(scalar) else {
                        throw fail("a character reference that is no character: &\(entity);")
                    }
                    out.append(contentsOf: Array(String(Character(u)).utf8))
                }
                i = end + 1
            }
        }
    }
}
