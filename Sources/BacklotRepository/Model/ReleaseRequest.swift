import BacklotProtocol
import Foundation

/// A request to release a version on the external or production channel, awaiting a reviewer.
public struct ReleaseRequest: Sendable, Hashable {
    public let id: Int
    public let app: String
    public let channel: Channel
    public let pack: String
    public let version: Int
    public let rolloutPercent: Double?
    /// `pending`, `approved`, `rejected` or `superseded`.
    public let status: String
    public let requested: Date
    /// The token that asked (nil for requests made before tokens had ids, or without a token).
    public let requestedBy: TokenReference?
    /// When it was approved, rejected or superseded.
    public let decided: Date?
    public let decidedBy: TokenReference?
    /// Why it was rejected.
    public let reason: String?
    /// The release notes of the version it releases.
    public let notes: String?

    /// The statuses a request can have.
    public static let statuses = API.releaseStatuses
}
