import BacklotProtocol
import Foundation

/// An app, as the repository records it (the management API sends it as `API.App`).
///
/// ```swift
/// let app = try repository.apps.setFourEyes(app: "com.example.game", true)
/// print(app.fourEyes)   // true
/// ```
public struct AppInfo: Sendable, Hashable {
    public let id: String
    public let created: Date
    /// Whether a release request must be approved by another token than the one that made it.
    public let fourEyes: Bool
    /// The storage the app may use (Apple's rule: per pack, the largest retained version; summed).
    public let quotaBytes: UInt64
    /// The second-reviewer rule: a production rollout step above this share (percent) must be made
    /// by another person than the one who approved the release; nil: no rule.
    public let secondReviewerAbove: Double?
}
