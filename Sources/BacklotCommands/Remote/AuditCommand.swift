import BacklotBasics
import BacklotProtocol

/// `backlot audit [--app A] [--action X] [--limit N] [--json]`: the audit trail, newest first.
struct AuditCommand: Command {
    static let app = Option<String?>("app", "APP", help: "Only this app's entries.")
    static let action = Option<String?>(
        "action", "ACTION", help: "Only this action (app.create, version.uploaded, release.approve, …).")
    static let limit = Option<Int>(
        "limit", "N", default: 100, in: 1...API.Limits.auditPageLimit, help: "How many entries, newest first.")
    static let spec = CommandSpec(
        name: "audit",
        summary:
            "Show the audit trail, newest first: when, who (token label and role, or the server), the app, pack and version, the action and what changed.",
        options: APIClient.options + [app, action, limit, jsonFlag],
        requirements: ServerOptions.requirements)

    static func run(_ arguments: ParsedArguments, io: any CommandIO) throws {
        let api = try APIClient(arguments, io: io, command: spec.name)
        let query = API.AuditQuery(app: arguments[app], action: arguments[action], limit: arguments[limit])
        let list = try api.send(API.listAudit, query: query.items)
        if arguments[jsonFlag] {
            /// `audit --json` (docs/json.md): the entries, as the API sends them.
            struct Output: Encodable { let entries: [API.AuditEntry] }
            try io.outJSON(Output(entries: list.entries))
            return
        }
        if list.entries.isEmpty { io.out("No audit entries.\n") }
        for e in list.entries {
            let who = e.actor.label.isEmpty ? "token \(RemoteNumber.text(e.actor.tokenId))" : e.actor.label
            var line = "\(e.time)\t\(who) (\(e.actor.role))\t\(e.action)"
            var target = e.app ?? ""
            if let pack = e.pack { target += "/" + pack }
            if let v = e.version { target += " v\(v)" }
            if !target.isEmpty { line += "\t" + target }
            let details = e.details.sorted { $0.key < $1.key }.map {
                "\($0.key)=\($0.value)"
            }
            if !details.isEmpty { line += "\t" + details.joined(separator: " ") }
            io.out(Self.printable(line) + "\n")
        }
    }

    /// The line without control characters other than tabs (labels and reasons come from API callers).
    static func printable(_ line: String) -> String {
        String(
            String.UnicodeScalarView(
                line.unicodeScalars.map { $0 == "\t" || $0.properties.generalCategory != .control ? $0 : "?" }))
    }
}
