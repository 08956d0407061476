import BacklotBasics
import BacklotProtocol

/// What a release would change, as `release --dry-run --json` prints it (docs/json.md): the
/// change's fields at the top, with the app:
/// `{"dryRun","app","needsApproval","channel","pack","from","to","catalogVersion"}`.
struct ReleasePlanOutput: Encodable {
    let dryRun: Bool
    let app: String
    let needsApproval: Bool
    let channel: String
    let pack: String
    let from: API.ReleasePlan.Side
    let to: API.ReleasePlan.Side
    let catalogVersion: UInt64

    init(_ p: API.ReleasePlan, app: String) {
        dryRun = p.dryRun
        self.app = app
        needsApproval = p.needsApproval
        channel = p.change.channel.rawValue
        pack = p.change.pack
        from = p.change.from
        to = p.change.to
        catalogVersion = p.change.catalogVersion
    }
}

extension API.ReleasePlan.Side {
    /// As text: `version 3 at 10 %`, `version 3 for every device`, `nothing`.
    var text: String {
        guard let version else { return "nothing" }
        return "version \(version)" + (rolloutPercent.map { " at \(RemoteNumber.text($0)) %" } ?? " for every device")
    }
}

extension API.TokenReference {
    /// As text: `alice (token #3, ci uploader)`.
    var text: String { label.isEmpty ? "\(person) (token #\(id))" : "\(person) (token #\(id), \(label))" }
}
