import BacklotProtocol
import Foundation

/// A token as `GET /api/tokens` lists it: never its secret nor the secret's hash.
///
/// ```swift
/// for token in try repository.tokens.list() where token.revoked == nil { print(token.id, token.label) }
/// ```
public struct TokenInfo: Sendable, Hashable {
    public let id: Int
    public let label: String
    public let role: Role
    /// The person (or service account) it belongs to; `token #ID` for a token made before people were.
    public let person: String
    public let created: Date
    /// When it was last used (updated at most once a minute), nil when never.
    public let lastUsed: Date?
    /// When it stops working, nil when never.
    public let expires: Date?
    /// When it was revoked, nil when it was not.
    public let revoked: Date?

    /// Whether it still opens the API at `now`.
    public func isUsable(at now: Date = Date()) -> Bool { revoked == nil && (expires.map { $0 > now } ?? true) }
}
