import BacklotProtocol

/// What a release would change, without changing it (`"dryRun": true`).
///
/// `from` is what the channel serves of the pack now: the version being rolled out and its
/// share when there is one, else the live version (nil when the pack is not on the channel);
/// `to` is what it would serve, a nil percentage meaning every device.
///
/// ```swift
/// let plan = try repository.releases.plan(app: "com.example.game", pack: "Levels", version: 3, channel: .production, rolloutPercent: 10)
/// print(plan.toVersion, plan.toPercent ?? 100)   // 3 10.0
/// ```
public struct ReleasePlan: Sendable, Hashable {
    public let channel: Channel
    public let pack: String
    public let fromVersion: Int?
    public let fromPercent: Double?
    public let toVersion: Int
    public let toPercent: Double?
    /// The catalog version the change would publish if it were published now.
    public let catalogVersion: UInt64
    /// Whether a reviewer must approve it (external and production).
    public let needsApproval: Bool
}
