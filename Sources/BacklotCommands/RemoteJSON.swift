import BacklotJSON

/// The management API's objects, renamed to the vocabulary of docs/json.md for `--json` output
/// (the API says `size` and `versions` where the CLI's other outputs say `packBytes` and `versionCount`).
enum RemoteJSON {
    static func number(_ node: JSONNode?) -> JSONNode {
        node.flatMap { if case .number = $0.kind { $0 } else { nil } } ?? .null
    }
    static func string(_ node: JSONNode?) -> JSONNode { node?.stringValue.map(JSONNode.string) ?? .null }
    static func value(_ node: JSONNode?) -> JSONNode { node ?? .null }

    /// A version: `{"app","pack","version","state","reason","packBytes","receivedBytes","installBytes","archiveSHA256","format"}`.
    static func version(_ v: JSONNode) -> JSONNode {
        .object([
            "app": string(v["app"]), "pack": string(v["pack"]), "version": number(v["version"]),
            "state": string(v["state"]),
            "reason": string(v["reason"]), "packBytes": number(v["size"]), "receivedBytes": number(v["received"]),
            "installBytes": number(v["installSize"]), "archiveSHA256": string(v["archiveSHA256"]),
            "format": string(v["format"]),
        ])
    }

    /// A release request: `{"id","app","pack","version","channel","rolloutPercent","status","requested","requestedBy","decided","decidedBy","reason"}`.
    static func request(_ r: JSONNode) -> JSONNode {
        .object([
            "id": number(r["id"]), "app": string(r["app"]), "pack": string(r["pack"]), "version": number(r["version"]),
            "channel": string(r["channel"]), "rolloutPercent": number(r["rolloutPercent"]),
            "status": string(r["status"]),
            "requested": string(r["requested"]), "requestedBy": value(r["requestedBy"]),
            "decided": string(r["decided"]),
            "decidedBy": value(r["decidedBy"]), "reason": string(r["reason"]),
        ])
    }

    /// Who asked or decided, as text: `#3 (ci uploader)`.
    static func who(_ node: JSONNode?) -> String {
        guard let node, let id = node["id"]?.integer(as: Int.self) else { return "-" }
        let label = node["label"]?.stringValue ?? ""
        return label.isEmpty ? "token #\(id)" : "token #\(id) (\(label))"
    }

    /// A number for text output: `12`, `2.5`, or `-`.
    static func text(_ node: JSONNode?) -> String {
        guard let node else { return "-" }
        switch node.kind {
        case .number(let n): return n
        case .string(let s): return s
        case .bool(let b): return b ? "yes" : "no"
        default: return "-"
        }
    }
}
