import BacklotProtocol
import Foundation

/// One change in the audit trail (``AuditLog/entries(app:action:limit:before:)``): when,
/// who (a token, or the server itself), on what, and what changed.
///
/// ```swift
/// for entry in try repository.audit.entries(app: "com.example.game", limit: 20).entries {
///     print(entry.time, entry.actorLabel, entry.action, entry.details)
/// }
/// ```
public struct AuditEntry: Sendable, Hashable {
    /// Grows with every entry: newer entries have larger ids.
    public let id: Int
    public let time: Date
    /// The token that made the change; nil for what the server (or a local command) did by itself.
    public let tokenID: Int?
    /// The token's label; `server` for the server's own work, `local` for a command run on the data folder.
    public let actorLabel: String
    /// `admin`, `uploader`, `reviewer`, `reader`, or `system` (no token).
    public let actorRole: String
    /// The person the token belonged to (nil for the server itself and for entries made before people were).
    public let actorPerson: String?
    public let app: String?
    public let pack: String?
    public let version: Int?
    /// One of ``AuditLog/actions``.
    public let action: String
    /// What changed (`channel`, `percent`, `from`, `to`, `reason`, …).
    public let details: [String: String]
}
