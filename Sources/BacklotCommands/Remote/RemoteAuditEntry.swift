import BacklotJSON

/// An entry of the audit trail, as `GET /api/audit` answers it and as `audit --json` prints it
/// (the same keys): `{"id","time","actor":{"tokenId","label","role"},"app","pack","version","action","details"}`.
struct RemoteAuditEntry: Codable {
    /// Who made the change: a token, or the server itself (`system`).
    struct Actor: Codable {
        @NullWhenAbsent var tokenId: Int? = nil
        let label: String
        let role: String
    }

    let id: Int
    let time: String
    let actor: Actor
    @NullWhenAbsent var app: String? = nil
    @NullWhenAbsent var pack: String? = nil
    @NullWhenAbsent var version: Int? = nil
    let action: String
    /// What changed (`channel`, `percent`, `from`, `to`, `reason`, …), as the server wrote it.
    let details: [String: JSONNode]

    /// `GET /api/audit`, and the `--json` of `audit`.
    struct List: Codable {
        let entries: [RemoteAuditEntry]
    }
}
