import BacklotCatalog
import BacklotJSON
import Foundation

/// An app as the API reports it.
///
/// ```swift
/// let app = try repository.apps.setFourEyes(app: "com.example.game", true)
/// print(app.json.serialized())   // {"id":"com.example.game","created":"…","fourEyes":true}
/// ```
public struct AppInfo: Sendable, Hashable {
    public let id: String
    public let created: Date
    /// Whether a release request must be approved by another token than the one that made it.
    public let fourEyes: Bool
    /// The storage the app may use (Apple's rule: per pack, the largest retained version; summed).
    public let quotaBytes: UInt64

    /// `{"id","created","fourEyes","quotaBytes"}`.
    public var json: JSONNode {
        .object([
            "id": .string(id), "created": .string(RFC3339.string(created)), "fourEyes": .bool(fourEyes),
            "quotaBytes": .number(quotaBytes),
        ])
    }
}
