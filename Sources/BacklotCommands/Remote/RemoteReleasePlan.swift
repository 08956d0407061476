/// What a release would change (`POST …/releases` with `dryRun`), as the management API answers it
/// (`{"dryRun","needsApproval","change":{…}}`) and as `--json` prints it (the change's fields at
/// the top, with the app): `{"dryRun","app","needsApproval","channel","pack","from","to","catalogVersion"}`.
struct RemoteReleasePlan: Encodable {
    /// A side of the change: the version a channel offers and at what rollout (nil: every device).
    struct Side: Codable {
        @NullWhenAbsent var version: Int? = nil
        @NullWhenAbsent var rolloutPercent: Double? = nil

        /// As text: `version 3 at 10 %`, `version 3 for every device`, `nothing`.
        var text: String {
            guard let version else { return "nothing" }
            return "version \(version)"
                + (rolloutPercent.map { " at \(RemoteNumber.text($0)) %" } ?? " for every device")
        }
    }

    var dryRun = true
    var app = ""
    let needsApproval: Bool
    let channel: String
    let pack: String
    let from: Side
    let to: Side
    let catalogVersion: Int
}

extension RemoteReleasePlan: Decodable {
    private struct Wire: Decodable {
        struct Change: Decodable {
            let channel: String
            let pack: String
            let from: Side
            let to: Side
            let catalogVersion: Int
        }
        let needsApproval: Bool
        let change: Change
    }

    init(from decoder: any Decoder) throws {
        let w = try Wire(from: decoder)
        self.init(
            needsApproval: w.needsApproval, channel: w.change.channel, pack: w.change.pack, from: w.change.from,
            to: w.change.to, catalogVersion: w.change.catalogVersion)
    }
}
