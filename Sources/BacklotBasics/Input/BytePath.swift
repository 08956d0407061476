/// The one rule for relative paths that come from outside (pack paths, selector paths,
/// destinations, URL paths, container paths): they are byte strings, as the kernel sees them.
///
/// Swift's `String` compares, hashes and splits by grapheme cluster under canonical equivalence:
/// `"..\u{301}"` is one `Character` sequence that is not `".."`, `"/\u{200D}"` is a single
/// `Character` that is not `"/"`, and an NFC name equals its NFD form. The kernel splits on the
/// byte 0x2F and compares bytes. Every check that decides where a file goes therefore works on
/// UTF-8 bytes: components are split on 0x2F only, `.` and `..` are byte comparisons, and paths
/// are ordered, deduplicated and looked up by their bytes (``Key``).
///
/// ```swift
/// BytePath.components("a/..\u{301}/b")       // ["a", "..\u{301}", "b"]: that middle name is not ".."
/// BytePath.components("a/\u{301}b")          // ["a", "\u{301}b"]: "/" followed by a mark still splits
/// BytePath.Key("caf\u{E9}") == BytePath.Key("cafe\u{301}")   // false: two files on Linux
/// ```
public enum BytePath {
    /// The byte that separates components.
    public static let separator = UInt8(ascii: "/")

    /// The components of `path`, split on the byte `/` only. Empty components are kept unless
    /// `omittingEmpty` is set.
    public static func components(_ path: String, omittingEmpty: Bool = false) -> [String] {
        path.utf8.split(separator: separator, omittingEmptySubsequences: omittingEmpty)
            .map { String(decoding: $0, as: UTF8.self) }
    }

    /// Whether `component` is exactly the byte `.`.
    public static func isDot(_ component: some StringProtocol) -> Bool {
        component.utf8.elementsEqual(".".utf8)
    }

    /// Whether `component` is exactly the bytes `..`.
    public static func isDotDot(_ component: some StringProtocol) -> Bool {
        component.utf8.elementsEqual("..".utf8)
    }

    /// The folders a relative path lies in, outermost first (`"a/b/c"` → `["a", "a/b"]`), split
    /// on the byte `/`.
    public static func ancestors(of path: String) -> [String] {
        let bytes = Array(path.utf8)
        return bytes.indices.filter { bytes[$0] == separator }.map { String(decoding: bytes[..<$0], as: UTF8.self) }
    }

    /// Whether two paths are the same bytes.
    public static func same(_ a: some StringProtocol, _ b: some StringProtocol) -> Bool {
        a.utf8.elementsEqual(b.utf8)
    }

    /// Whether `a` sorts before `b` by UTF-8 bytes (the order of pack paths).
    public static func precedes(_ a: some StringProtocol, _ b: some StringProtocol) -> Bool {
        a.utf8.lexicographicallyPrecedes(b.utf8)
    }

    /// Whether `path` is `root` or lies beneath it, comparing bytes and whole components.
    public static func isInside(_ path: String, _ root: String) -> Bool {
        if same(path, root) { return true }
        var prefix = Array(root.utf8)
        if prefix.last != separator { prefix.append(separator) }
        return path.utf8.starts(with: prefix)
    }

    /// Whether `path` is relative and none of its components is empty, `.` or `..` (byte
    /// comparisons), and it holds no NUL: the test for a path that may be joined under a root.
    public static func isSafeRelative(_ path: String) -> Bool {
        // One pass over the bytes, with no component made (the server checks every request's path).
        var length = 0  // of the component so far
        var dots = 0  // how many of its bytes are "."
        for byte in path.utf8 {
            if byte == 0 { return false }
            if byte == separator {
                guard length > 0, !(length == dots && dots <= 2) else { return false }
                (length, dots) = (0, 0)
            } else {
                length += 1
                if byte == UInt8(ascii: ".") { dots += 1 }
            }
        }
        return length > 0 && !(length == dots && dots <= 2)
    }

    /// A path's bytes as a dictionary key or sort key: two paths are one key only when their
    /// bytes are equal (never by Unicode equivalence).
    public struct Key: Hashable, Comparable, Sendable, CustomStringConvertible {
        public let bytes: [UInt8]

        public init(_ path: some StringProtocol) { bytes = Array(path.utf8) }

        /// The path as text.
        public var path: String { String(decoding: bytes, as: UTF8.self) }
        public var description: String { path }

        public static func < (a: Key, b: Key) -> Bool { a.bytes.lexicographicallyPrecedes(b.bytes) }
    }
}
