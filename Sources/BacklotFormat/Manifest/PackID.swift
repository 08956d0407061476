import BacklotBasics

/// The identifier of an asset pack (`assetPackID` in a manifest, `id` in a catalog).
///
/// The rule: `[A-Za-z0-9][A-Za-z0-9._-]{0,254}`, and never `.` or `..`. IDs with `.` or `_` are
/// valid here (reverse-DNS IDs are common in self-hosted projects) but App Store Connect refuses
/// them, so ``appStoreConnectWarning`` says so. An ID is never used raw as a file-system path.
///
/// ```swift
/// let id = try PackID("Tutorial")
/// let dotted = try PackID("com.example.levels")   // valid; dotted.appStoreConnectWarning != nil
/// ```
public struct PackID: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The identifier text.
    public let rawValue: String

    /// The longest identifier, in characters.
    public static let maximumLength = 255

    /// Validates `rawValue`.
    /// - Throws: ``BacklotError/Code/invalidPackID`` saying which rule is broken.
    public init(_ rawValue: String) throws {
        if let problem = PackID.problem(with: rawValue) {
            throw BacklotError(
                .invalidPackID, problem.message, context: "assetPackID \(JSONQuote.quote(rawValue))", hint: problem.hint
            )
        }
        self.rawValue = rawValue
    }

    /// What is wrong with `text` as a pack ID, or nil when it is valid.
    public static func problem(with text: String) -> (message: String, hint: String)? {
        let hint =
            "use letters, digits, '-', '.' and '_' (starting with a letter or digit), at most 255 characters; for App Store Connect use only letters, digits and '-'"
        if text.isEmpty { return ("a pack ID must not be empty", hint) }
        if text.hasPrefix("[") && text.hasSuffix("]") {
            return (
                "\(JSONQuote.quote(text)) is still the template's placeholder",
                "replace it with your pack's ID, such as \"Tutorial\""
            )
        }
        if text == "." || text == ".." { return ("a pack ID must not be '.' or '..'", hint) }
        let scalars = Array(text.unicodeScalars)
        if scalars.count > maximumLength {
            return ("a pack ID has at most \(maximumLength) characters (this one has \(scalars.count))", hint)
        }
        for (i, s) in scalars.enumerated() {
            let alnum = s.isASCII && (("A"..."Z").contains(s) || ("a"..."z").contains(s) || ("0"..."9").contains(s))
            if i == 0 && !alnum {
                return ("a pack ID must start with a letter or digit, not \(describe(s))", hint)
            }
            if !alnum && s != "." && s != "_" && s != "-" {
                return ("a pack ID must not contain \(describe(s)) (at character \(i + 1))", hint)
            }
        }
        return nil
    }

    private static func describe(_ s: Unicode.Scalar) -> String {
        switch s {
        case " ": "a space"
        case "/": "'/'"
        default: s.isASCII && s.value >= 0x20 ? "'\(s)'" : "U+\(String(s.value, radix: 16, uppercase: true))"
        }
    }

    /// Why App Store Connect would refuse this otherwise valid ID, or nil.
    public var appStoreConnectWarning: String? {
        let dot = rawValue.contains(".")
        let underscore = rawValue.contains("_")
        guard dot || underscore else { return nil }
        let what = dot && underscore ? "'.' and '_'" : dot ? "'.'" : "'_'"
        return
            "App Store Connect refuses pack IDs containing \(what); fine for self-hosting, but use letters, digits and '-' if the pack may go to Apple's hosting"
    }

    public var description: String { rawValue }

    public static func < (a: PackID, b: PackID) -> Bool { a.rawValue < b.rawValue }
}

/// JSON string quoting for messages, without depending on the JSON module here.
enum JSONQuote {
    static func quote(_ s: String) -> String {
        "\"" + s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }
}
