import BacklotJSON

/// One finding about a manifest: where (JSON path, line, column), which rule, and how to fix it.
public struct ManifestDiagnostic: Sendable, Hashable, CustomStringConvertible {
    /// Errors stop packaging; warnings are printed and packaging goes on.
    public enum Severity: String, Sendable, Hashable { case error, warning }

    public let severity: Severity
    /// A stable rule name, such as `downloadPolicy.exactlyOne`.
    public let rule: String
    /// The JSON path of the value, such as `fileSelectors[2].file`, or `(root)`.
    public let jsonPath: String
    /// Where the value starts in the text.
    public let position: JSONPosition
    /// What is wrong.
    public let message: String
    /// What to do about it.
    public let fix: String?

    /// `line:column: path: message (fix)`.
    public var description: String {
        var text = "\(position.line):\(position.column): \(jsonPath): \(message)"
        if let fix { text += "; \(fix)" }
        return text
    }
}
