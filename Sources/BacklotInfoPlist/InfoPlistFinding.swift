/// One thing `backlot plist check` reports: where (the key path), how bad, and what to do.
public struct InfoPlistFinding: Sendable, Hashable, CustomStringConvertible {
    public enum Severity: String, Sendable, Hashable { case error, warning }

    public let severity: Severity
    /// A stable rule name, such as `manifestURL.https`.
    public let rule: String
    /// The key path, such as `BAInitialDownloadRestrictions.BADownloadAllowance`.
    public let keyPath: String
    public let message: String
    public let fix: String?

    public var description: String {
        "\(severity): \(keyPath): \(message)" + (fix.map { "; \($0)" } ?? "")
    }
}
