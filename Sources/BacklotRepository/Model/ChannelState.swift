import BacklotCatalog
import BacklotJSON
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

    /// One pack's entry: `{"pack","live":{"version","archiveSHA256"}|null,"candidate":{"version","rolloutPercent"}|null}`,
    /// with `"channel"` first when given (what `POST …/rollout` answers).
    public static func packJSON(_ p: Pack?, pack: String, channel: Channel? = nil) -> JSONNode {
        var members: [JSONMember] = []
        if let channel { members.append(JSONMember(key: "channel", value: .string(channel.rawValue))) }
        members.append(JSONMember(key: "pack", value: .string(pack)))
        members.append(
            JSONMember(
                key: "live",
                value: p?.liveVersion.map {
                    .object([
                        "version": .number($0), "archiveSHA256": p?.liveArchiveSHA256.map(JSONNode.string) ?? .null,
                    ])
                } ?? .null))
        members.append(
            JSONMember(
                key: "candidate",
                value: p?.candidateVersion.map {
                    .object(["version": .number($0), "rolloutPercent": .number(p?.candidatePercent ?? 0)])
                } ?? .null))
        return JSONNode(.object(members))
    }

    /// The `GET /api/apps/{app}/channels/{channel}` body.
    public var json: JSONNode {
        .object([
            "app": .string(app), "channel": .string(channel.rawValue),
            "catalogVersion": catalogVersion.map { .number($0) } ?? .null,
            "expires": expires.map { .string(RFC3339.string($0)) } ?? .null, "signingKey": .string(signingKey),
            "packs": .array(packs.map { Self.packJSON($0, pack: $0.pack) }),
        ])
    }
}
