import BacklotProtocol
import Foundation

/// A token just made or rotated, with its secret: shown once (only its SHA-256 is stored).
///
/// ```swift
/// let issued = try repository.tokens.issue(role: .reviewer, label: "release manager", expiresIn: 86_400)
/// print(issued.token)   // blt_…
/// ```
public struct IssuedToken: Sendable, Hashable {
    public let id: Int
    /// The secret, `blt_` and 64 hex digits.
    public let token: String
    public let role: Role
    public let label: String
    /// The person (or service account) it belongs to.
    public let person: String
    public let created: Date
    public let expires: Date?
}
