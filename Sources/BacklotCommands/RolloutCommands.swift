import BacklotBasics
import BacklotJSON
import BacklotRepository

/// `backlot rollout --app A --pack P --percent N`: raise, lower, halt (0) or complete (100) a staged production rollout.
struct RolloutCommand: Command {
    static let percent = Option<Double>(
        "percent", "N",
        help: "The share of devices offered the candidate: 0 halts it, 100 makes it live for every device.",
        expected: "a percentage from 0 to 100, such as 50 or 2.5", check: { (0...100).contains($0) })
    static let spec = CommandSpec(
        name: "rollout",
        summary:
            "Change a staged production rollout: raise or lower it, halt it with 0 (devices keep the live version), or promote the candidate with 100. Needs a reviewer token.",
        options: APIClient.options + [PackOptions.app, PackOptions.pack, percent, jsonFlag],
        requirements: ServerOptions.requirements)

    static func run(_ arguments: ParsedArguments, io: any CommandIO) throws {
        let api = try APIClient(arguments, io: io, command: spec.name)
        let app = arguments[PackOptions.app]
        let pack = arguments[PackOptions.pack]
        let p = arguments[percent]
        try api.call("POST", "\(APIClient.pack(app, pack))/rollout", json: .object(["percent": .number(p)]))
        let shown = p == p.rounded() ? String(Int(p)) : String(p)
        if arguments[jsonFlag] {
            io.out(
                JSONNode.object([
                    "app": .string(app), "pack": .string(pack), "channel": .string("production"),
                    "rolloutPercent": .number(p),
                    "promoted": .bool(p == 100), "halted": .bool(p == 0),
                ]).prettyPrinted() + "\n")
        } else if p == 100 {
            io.out(
                "\(app)/\(pack): the candidate is live on production for every device; the catalog is re-signed and published.\n"
            )
        } else if p == 0 {
            io.out(
                "\(app)/\(pack): rollout halted at 0 %; devices are offered the live version (raise it again with --percent N to resume).\n"
            )
        } else {
            io.out("\(app)/\(pack): the candidate is offered to \(shown) % of devices on production.\n")
        }
    }
}

/// `backlot rollback --app A --pack P --channel C [--version N]`.
struct RollbackCommand: Command {
    static let spec = CommandSpec(
        name: "rollback",
        summary:
            "Roll a channel back: to --version N (a complete version), or without it drop the candidate being rolled out, or else bring back the version live before. Needs a reviewer token.",
        options: APIClient.options + [
            PackOptions.app, PackOptions.pack, PackOptions.channel, PackOptions.optionalVersion, jsonFlag,
        ],
        requirements: ServerOptions.requirements)

    static func run(_ arguments: ParsedArguments, io: any CommandIO) throws {
        let api = try APIClient(arguments, io: io, command: spec.name)
        let app = arguments[PackOptions.app]
        let pack = arguments[PackOptions.pack]
        let channel = arguments[PackOptions.channel].rawValue
        var body: [JSONMember] = [JSONMember(key: "channel", value: .string(channel))]
        if let v = arguments[PackOptions.optionalVersion] { body.append(JSONMember(key: "version", value: .number(v))) }
        let r = try api.call("POST", "\(APIClient.pack(app, pack))/rollback", json: JSONNode(.object(body)))
        let live = r.json["version"]?.integer(as: Int.self) ?? arguments[PackOptions.optionalVersion]
        if arguments[jsonFlag] {
            io.out(
                JSONNode.object([
                    "app": .string(app), "pack": .string(pack), "channel": .string(channel),
                    "version": live.map { .number($0) } ?? .null,
                ]).prettyPrinted() + "\n")
        } else {
            io.out(
                "\(app)/\(pack) on \(channel): version \(live.map(String.init) ?? "?") is live; the catalog is re-signed and published.\n"
            )
        }
    }
}

/// `backlot withdraw --app A --pack P --channel C`.
struct WithdrawCommand: Command {
    static let spec = CommandSpec(
        name: "withdraw",
        summary: "Take a pack off a channel's catalog (devices remove it at their next check). Needs a reviewer token.",
        options: APIClient.options + [PackOptions.app, PackOptions.pack, PackOptions.channel, jsonFlag],
        requirements: ServerOptions.requirements)

    static func run(_ arguments: ParsedArguments, io: any CommandIO) throws {
        let api = try APIClient(arguments, io: io, command: spec.name)
        let app = arguments[PackOptions.app]
        let pack = arguments[PackOptions.pack]
        let channel = arguments[PackOptions.channel].rawValue
        try api.call("POST", "\(APIClient.pack(app, pack))/withdraw", json: .object(["channel": .string(channel)]))
        if arguments[jsonFlag] {
            io.out(
                JSONNode.object([
                    "app": .string(app), "pack": .string(pack), "channel": .string(channel), "withdrawn": .bool(true),
                ]).prettyPrinted() + "\n")
        } else {
            io.out("Withdrew \(app)/\(pack) from \(channel); the catalog is re-signed and published.\n")
        }
    }
}

/// `backlot releases list --app A [--channel C] [--pending]`: release requests, who asked and who decided.
struct ReleasesListCommand: Command {
    static let pending = Flag("pending", help: "Only the requests that await a reviewer.")
    static let spec = CommandSpec(
        name: "releases list",
        summary:
            "List an app's release requests: pack, version, channel, rollout, status, who asked and when, who decided and when.",
        options: APIClient.options + [PackOptions.app, PackOptions.optionalChannel, pending, jsonFlag],
        requirements: ServerOptions.requirements)

    static func run(_ arguments: ParsedArguments, io: any CommandIO) throws {
        let api = try APIClient(arguments, io: io, command: spec.name)
        let app = arguments[PackOptions.app]
        let channel = arguments[PackOptions.optionalChannel]
        var query: [String] = []
        if let channel { query.append("channel=\(channel.rawValue)") }
        if arguments[pending] { query.append("status=pending") }
        let r = try api.call(
            "GET", "\(APIClient.app(app))/releases" + (query.isEmpty ? "" : "?" + query.joined(separator: "&")))
        // Filtered here too, so that a server that ignores the query still gives what was asked.
        let list = (r.json["releases"]?.arrayElements ?? []).filter {
            (channel == nil || $0["channel"]?.stringValue == channel?.rawValue)
                && (!arguments[pending] || $0["status"]?.stringValue == "pending")
        }
        if arguments[jsonFlag] {
            io.out(
                JSONNode.object(["app": .string(app), "releases": .array(list.map(RemoteJSON.request))]).prettyPrinted()
                    + "\n")
            return
        }
        if list.isEmpty {
            io.out(
                "No release requests\(arguments[pending] ? " pending" : "") for \(app)\(channel.map { " on \($0.rawValue)" } ?? "").\n"
            )
        }
        for q in list {
            var line =
                "#\(RemoteJSON.text(q["id"]))\t\(q["pack"]?.stringValue ?? "?") v\(RemoteJSON.text(q["version"]))\t\(q["channel"]?.stringValue ?? "?")"
            if let p = q["rolloutPercent"], p.kind != .null { line += " at \(RemoteJSON.text(p)) %" }
            line += "\t\(q["status"]?.stringValue ?? "?")"
            line += "\tasked by \(RemoteJSON.who(q["requestedBy"])) \(RemoteJSON.text(q["requested"]))"
            if let decided = q["decided"]?.stringValue {
                line += "\tdecided by \(RemoteJSON.who(q["decidedBy"])) \(decided)"
            }
            if let reason = q["reason"]?.stringValue { line += "\t(\(reason))" }
            io.out(line + "\n")
        }
    }
}

/// `backlot catalog show --app A --channel C`: what a channel's catalog offers now.
struct CatalogShowCommand: Command {
    static let spec = CommandSpec(
        name: "catalog show",
        summary:
            "Show a channel's catalog: per pack the live version, the candidate and its rollout percentage; the catalog version, expiry and signing key.",
        options: APIClient.options + [PackOptions.app, PackOptions.channel, jsonFlag],
        requirements: ServerOptions.requirements)

    static func run(_ arguments: ParsedArguments, io: any CommandIO) throws {
        let api = try APIClient(arguments, io: io, command: spec.name)
        let app = arguments[PackOptions.app]
        let channel = arguments[PackOptions.channel].rawValue
        let c = try api.call("GET", "\(APIClient.app(app))/channels/\(channel)").json
        let packs = c["packs"]?.arrayElements ?? []
        if arguments[jsonFlag] {
            io.out(
                JSONNode.object([
                    "app": .string(app), "channel": .string(channel),
                    "catalogVersion": RemoteJSON.number(c["catalogVersion"]),
                    "expires": RemoteJSON.string(c["expires"]), "signingKey": RemoteJSON.string(c["signingKey"]),
                    "packs": .array(
                        packs.map { p in
                            .object([
                                "pack": RemoteJSON.string(p["pack"]),
                                "live": p["live"].flatMap {
                                    $0.kind == .null
                                        ? nil
                                        : JSONNode.object([
                                            "version": RemoteJSON.number($0["version"]),
                                            "archiveSHA256": RemoteJSON.string($0["archiveSHA256"]),
                                        ])
                                } ?? .null,
                                "candidate": p["candidate"].flatMap {
                                    $0.kind == .null
                                        ? nil
                                        : JSONNode.object([
                                            "version": RemoteJSON.number($0["version"]),
                                            "rolloutPercent": RemoteJSON.number($0["rolloutPercent"]),
                                        ])
                                } ?? .null,
                            ])
                        }),
                ]).prettyPrinted() + "\n")
            return
        }
        io.out(
            "\(app) \(channel): catalog version \(RemoteJSON.text(c["catalogVersion"])), expires \(RemoteJSON.text(c["expires"])), signed by \(RemoteJSON.text(c["signingKey"]))\n"
        )
        if packs.isEmpty { io.out("  no packs released\n") }
        for p in packs {
            var line = "  \(p["pack"]?.stringValue ?? "?")\tlive "
            if let live = p["live"], live.kind != .null {
                line += "v\(RemoteJSON.text(live["version"]))"
            } else {
                line += "none"
            }
            if let cand = p["candidate"], cand.kind != .null {
                line +=
                    "\tcandidate v\(RemoteJSON.text(cand["version"])) at \(RemoteJSON.text(cand["rolloutPercent"])) %"
            }
            io.out(line + "\n")
        }
    }
}
