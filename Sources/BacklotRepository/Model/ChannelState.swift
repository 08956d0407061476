import BacklotProtocol
import Foundation

/// What a channel publishes, from the record: per pack the live version and a candidate being
/// rolled out; the catalog's version and expiry; the key that signs it. The published catalog
/// says the same (a test reads both).
///
/// ```swift
/// let state = try repository.releases.channelState(app: "com.example.game", channel: .production)
/// print(state.packs.first?.candidatePercent ?? 0)
/// ```
public struct ChannelState: Sendable, Hashable {
    /// One pack on the channel: its live version (and that archive's SHA-256), and the candidate being rolled out with its share (0 while halted).
    public struct Pack: Sendable, Hashable {
        public let pack: String
        public let liveVersion: Int?
        public let liveArchiveSHA256: String?
        public let candidateVersion: Int?
        public let candidatePercent: Double?
    }

    public let app: String
    public let channel: Channel
    public let catalogVersion: UInt64?
    public let expires: Date?
    /// The signing key's id, as the key list names it (`keyid`).
    public let signingKey: String
    public let packs: [Pack]
}
