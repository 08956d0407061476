import BacklotBasics
import BacklotProtocol

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
        try api.call(
            API.rollout, [.app: app, .pack: pack], body: API.RolloutChange(percent: API.RolloutShare(percent: p)))
        let shown = RemoteNumber.text(p)
        if arguments[jsonFlag] {
            struct Output: Encodable {
                let app: String
                let pack: String
                var channel = Channel.production.rawValue
                let rolloutPercent: Double
                let promoted: Bool
                let halted: Bool
            }
            try io.outJSON(Output(app: app, pack: pack, rolloutPercent: p, promoted: p == 100, halted: p == 0))
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
        let r = try api.send(
            API.rollback, [.app: app, .pack: pack],
            body: API.RollbackRequest(
                channel: arguments[PackOptions.channel], version: arguments[PackOptions.optionalVersion]))
        let live: Int? = r.version
        if arguments[jsonFlag] {
            struct Output: Encodable {
                let app: String
                let pack: String
                let channel: String
                @NullWhenAbsent var version: Int?
            }
            try io.outJSON(Output(app: app, pack: pack, channel: channel, version: live))
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
        try api.call(
            API.withdraw, [.app: app, .pack: pack], body: API.WithdrawRequest(channel: arguments[PackOptions.channel])
        )
        if arguments[jsonFlag] {
            struct Output: Encodable {
                let app: String
                let pack: String
                let channel: String
                var withdrawn = true
            }
            try io.outJSON(Output(app: app, pack: pack, channel: channel))
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
        let query = API.ReleaseQuery(channel: channel, status: arguments[pending] ? "pending" : nil)
        let answer = try api.send(API.listReleases, [.app: app], query: query.items)
        // Filtered here too, so that a server that ignores the query still gives what was asked.
        let list = answer.releases.filter {
            (channel == nil || $0.channel.rawValue == channel?.rawValue)
                && (!arguments[pending] || $0.status == "pending")
        }
        if arguments[jsonFlag] {
            struct Output: Encodable {
                let app: String
                let releases: [API.ReleaseRequest]
            }
            try io.outJSON(Output(app: app, releases: list))
            return
        }
        if list.isEmpty {
            io.out(
                "No release requests\(arguments[pending] ? " pending" : "") for \(app)\(channel.map { " on \($0.rawValue)" } ?? "").\n"
            )
        }
        for q in list {
            var line = "#\(q.id)\t\(q.pack) v\(q.version)\t\(q.channel.rawValue)"
            if let p = q.rolloutPercent { line += " at \(RemoteNumber.text(p)) %" }
            line += "\t\(q.status)"
            line += "\tasked by \(q.requestedBy?.text ?? "-") \(q.requested)"
            if let decided = q.decided { line += "\tdecided by \(q.decidedBy?.text ?? "-") \(decided)" }
            if let reason = q.reason { line += "\t(\(reason))" }
            io.out(line + "\n")
            // The version's release notes, indented under it.
            for note in (q.notes ?? "").split(separator: "\n", omittingEmptySubsequences: false) where q.notes != nil {
                io.out("    \(note)\n")
            }
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
        let c = try api.send(API.getChannel, [.app: app, .channel: channel])
        if arguments[jsonFlag] {
            try io.outJSON(c)
            return
        }
        io.out(
            "\(app) \(channel): catalog version \(RemoteNumber.text(c.catalogVersion)), expires \(c.expires ?? "-"), signed by \(c.signingKey)\n"
        )
        if c.packs.isEmpty { io.out("  no packs released\n") }
        for p in c.packs {
            var line = "  \(p.pack)\tlive " + (p.live.map { "v\($0.version)" } ?? "none")
            if let cand = p.candidate {
                line += "\tcandidate v\(cand.version) at \(RemoteNumber.text(cand.rolloutPercent)) %"
            }
            io.out(line + "\n")
        }
    }
}
