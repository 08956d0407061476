import BacklotBasics
import Foundation

/// A default App Clip link, as App Store Connect makes them:
/// `https://appclip.apple.com/id?p=BUNDLE_ID&KEY=VALUE…`.
///
/// Parameters keep their order; names and values are percent-encoded as UTF-8 except RFC 3986's
/// unreserved characters (so `+`, `&`, `=` and spaces survive), and parsing decodes them as
/// `NSURLComponents.queryItems` does (a `+` stays a `+`). Demo links take no parameters.
///
/// ```swift
/// let link = try AppClipLink(bundleIdentifier: "com.example.Game.Clip", parameters: [.init(name: "table", value: "12")])
/// link.string   // https://appclip.apple.com/id?p=com.example.Game.Clip&table=12
/// try AppClipLink(parsing: link.string) == link
/// ```
public struct AppClipLink: Sendable, Hashable {
    /// One `name=value` query item.
    public struct Parameter: Sendable, Hashable {
        public let name: String
        public let value: String
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    public static let host = "appclip.apple.com"
    public let bundleIdentifier: String
    public let parameters: [Parameter]
    public let isDemo: Bool

    /// - Throws: ``BacklotError/Code/invalidInput`` for a bad bundle identifier, a parameter named
    ///   `p`, or parameters on a demo link.
    public init(bundleIdentifier: String, parameters: [Parameter] = [], demo: Bool = false) throws {
        if let problem = Self.bundleIdentifierProblem(bundleIdentifier) {
            throw BacklotError(
                .invalidInput, problem, context: bundleIdentifier,
                hint: "use the App Clip's bundle identifier, such as com.example.Game.Clip")
        }
        if demo && !parameters.isEmpty {
            throw BacklotError(
                .invalidInput, "a demo App Clip link can't contain URL parameters", context: bundleIdentifier,
                hint: "drop the parameters, or use the default link")
        }
        if let p = parameters.first(where: { $0.name == "p" }) {
            throw BacklotError(
                .invalidInput, "the parameter name \"p\" is reserved for the bundle identifier", context: "p=\(p.value)"
            )
        }
        if let empty = parameters.first(where: { $0.name.isEmpty }) {
            throw BacklotError(.invalidInput, "a parameter has no name", context: "=\(empty.value)")
        }
        self.bundleIdentifier = bundleIdentifier
        self.parameters = parameters
        isDemo = demo
    }

    /// Parses a link.
    /// - Throws: ``BacklotError/Code/invalidInput`` saying what is wrong (scheme, host, path, `p`, bundle identifier, parameters of a demo link).
    public init(parsing text: String, demo: Bool = false) throws {
        func bad(_ message: String, hint: String? = nil) -> BacklotError {
            BacklotError(
                .invalidInput, message, context: text,
                hint: hint
                    ?? "a default App Clip link looks like https://appclip.apple.com/id?p=com.example.Clip&key=value")
        }
        guard text.hasPrefix("https://") else { throw bad("an App Clip link starts with https://") }
        let rest = text.dropFirst("https://".count)
        let hostEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        let host = rest[..<hostEnd]
        guard host.lowercased() == Self.host else {
            throw bad("the host is \(host.isEmpty ? "missing" : String(host)), not \(Self.host)")
        }
        var afterHost = rest[hostEnd...]
        if let hash = afterHost.firstIndex(of: "#") { afterHost = afterHost[..<hash] }
        let queryStart = afterHost.firstIndex(of: "?")
        let path = queryStart.map { afterHost[..<$0] } ?? afterHost
        guard path == "/id" else { throw bad("the path is \(path.isEmpty ? "empty" : String(path)), not /id") }
        guard let queryStart else { throw bad("the link has no query, so no p=BUNDLE_ID") }
        var items: [Parameter] = []
        for piece in afterHost[afterHost.index(after: queryStart)...].split(
            separator: "&", omittingEmptySubsequences: true)
        {
            let eq = piece.firstIndex(of: "=")
            guard let name = Self.decode(eq.map { piece[..<$0] } ?? piece),
                let value = Self.decode(eq.map { piece[piece.index(after: $0)...] } ?? "")
            else {
                throw bad("\(piece) is not valid percent-encoded UTF-8")
            }
            items.append(Parameter(name: name, value: value))
        }
        let ps = items.filter { $0.name == "p" }
        guard ps.count == 1, let p = ps.first else {
            throw bad(ps.isEmpty ? "the link has no p=BUNDLE_ID parameter" : "the link has \(ps.count) p parameters")
        }
        try self.init(bundleIdentifier: p.value, parameters: items.filter { $0.name != "p" }, demo: demo)
    }

    /// The link's text.
    public var string: String {
        var s = "https://\(Self.host)/id?p=" + Self.encode(bundleIdentifier)
        for p in parameters { s += "&" + Self.encode(p.name) + "=" + Self.encode(p.value) }
        return s
    }

    /// What is wrong with a bundle identifier (letters, digits, '-' and '.', in dot-separated parts), or nil.
    public static func bundleIdentifierProblem(_ id: String) -> String? {
        if id.isEmpty { return "the bundle identifier is empty" }
        if id.utf8.count > 155 { return "the bundle identifier is longer than 155 characters" }
        let parts = id.split(separator: ".", omittingEmptySubsequences: false)
        if parts.count < 2 {
            return "\"\(id)\" is not a reverse-DNS bundle identifier (it needs at least two parts separated by '.')"
        }
        if parts.contains(where: \.isEmpty) { return "\"\(id)\" has an empty part between dots" }
        if let c = id.unicodeScalars.first(where: {
            !($0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "-" || $0 == "."))
        }) {
            return "\"\(id)\" contains '\(c)'; bundle identifiers use letters, digits, '-' and '.'"
        }
        return nil
    }

    static func encode(_ s: String) -> String {
        var out = ""
        for b in s.utf8 {
            let c = Character(UnicodeScalar(b))
            if b < 0x80 && (c.isLetter || c.isNumber || "-._~".contains(c)) {
                out.append(c)
            } else {
                out += "%" + String(format: "%02X", b)
            }
        }
        return out
    }

    static func decode<S: StringProtocol>(_ s: S) -> String? {
        var bytes: [UInt8] = []
        var it = Array(s.utf8)[...]
        while let b = it.popFirst() {
            if b == UInt8(ascii: "%") {
                guard it.count >= 2, let v = UInt8(String(decoding: it.prefix(2), as: UTF8.self), radix: 16) else {
                    return nil
                }
                bytes.append(v)
                it = it.dropFirst(2)
            } else {
                bytes.append(b)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }
}
