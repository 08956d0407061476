import BacklotJSON

/// A version of a pack, as the API reports it.
public struct VersionInfo: Sendable, Hashable {
    public let app: String
    public let pack: String
    public let number: Int
    public let state: VersionState
    public let reason: String?
    public let declaredSize: UInt64
    public let received: UInt64
    public let archiveSHA256: String?
    public let installSize: UInt64?
    public let format: ArchiveFormat

    /// JSON for the API.
    public var json: JSONNode {
        .object([
            "app": .string(app), "pack": .string(pack), "version": .number(number), "state": .string(state.rawValue),
            "reason": reason.map(JSONNode.string) ?? .null, "size": .number(declaredSize),
            "received": .number(received),
            "archiveSHA256": archiveSHA256.map(JSONNode.string) ?? .null,
            "installSize": installSize.map { JSONNode.number($0) } ?? .null,
            "format": .string(format.rawValue),
        ])
    }
}
