import BacklotBasics
import BacklotJSON
import BacklotRepository

/// `backlot audit [--app A] [--action X] [--limit N] [--json]`: the audit trail, newest first.
struct AuditCommand: Command {
    static let app = Option<String?>("app", "APP", help: "Only this app's entries.")
    static let action = Option<String?>(
        "action", "ACTION", help: "Only this action (app.create, version.uploaded, release.approve, …).")
    static let limit = Option<Int>(
        "limit", "N", default: 100, in: 1...Repository.auditPageLimit, help: "How many entries, newest first.")
    static let spec = CommandSpec(
        name: "audit",
        summary:
            "Show the audit trail, newest first: when, who (token label and role, or the server), the app, pack and version, the action and what changed.",
        options: APIClient.options + [app, action, limit, jsonFlag],
        requirements: ServerOptions.requirements)

    static func run(_ arguments: ParsedArguments, io: any CommandIO) throws {
        let api = try APIClient(arguments, io: io, command: spec.name)
        var query = ["limit=\(arguments[limit])"]
        if let app = arguments[app] { query.append("app=\(APIClient.segment(app))") }
        if let action = arguments[action] { query.append("action=\(APIClient.segment(action))") }
        let r = try api.call("GET", "/api/audit?" + query.joined(separator: "&"))
        let entries = r.json["entries"]?.arrayElements ?? []
        if arguments[jsonFlag] {
            io.out(JSONNode.object(["entries": .array(entries)]).prettyPrinted() + "\n")
            return
        }
        if entries.isEmpty { io.out("No audit entries.\n") }
        for e in entries {
            let actor = e["actor"]
            var who = actor?["label"]?.stringValue ?? "?"
            if who.isEmpty { who = "token \(RemoteJSON.text(actor?["tokenId"]))" }
            var line = "\(e["time"]?.stringValue ?? "?")\t\(who) (\(actor?["role"]?.stringValue ?? "?"))"
            line += "\t\(e["action"]?.stringValue ?? "?")"
            var target = e["app"]?.stringValue ?? ""
            if let pack = e["pack"]?.stringValue { target += "/" + pack }
            if let v = e["version"], v.kind != .null { target += " v\(RemoteJSON.text(v))" }
            if !target.isEmpty { line += "\t" + target }
            let details = (e["details"]?.objectMembers ?? []).map { "\($0.key)=\($0.value.stringValue ?? "")" }
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
