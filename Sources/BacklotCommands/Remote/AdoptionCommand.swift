import BacklotBasics
import BacklotProtocol

/// `backlot adoption --app A [--days N]`: what the app's devices reported, per day and release.
struct AdoptionCommand: Command {
    static let days = Option<Int>(
        "days", "N", default: 7, in: 1...API.Limits.longestDownloadReport, help: "Days back from today, today included."
    )
    static let spec = CommandSpec(
        name: "adoption",
        summary:
            "Show what an app's devices reported, per UTC day, channel and release: devices holding it and installs started, finished and failed (figures below 10 are shown as < 10). Needs a reader token.",
        options: APIClient.options + [PackOptions.app, days, jsonFlag],
        requirements: ServerOptions.requirements)

    static func run(_ arguments: ParsedArguments, io: any CommandIO) throws {
        let api = try APIClient(arguments, io: io, command: spec.name)
        let app = arguments[PackOptions.app]
        let adoption = try api.send(
            API.getAdoption, [.app: app], query: API.DownloadsQuery(days: arguments[days]).items)
        if arguments[jsonFlag] {
            try io.outJSON(adoption)
            return
        }
        io.out("\(app): devices' reports from \(adoption.from) to \(adoption.to)\n")
        if adoption.rows.isEmpty { io.out("  no reports\n") }
        func shown(_ n: Int64?) -> String { n.map(String.init) ?? "< \(adoption.threshold)" }
        for r in adoption.rows {
            guard let pack = r.pack, let version = r.version else {
                io.out("  \(r.date)\t\(r.channel.rawValue)\t\(shown(r.devices)) devices reported\n")
                continue
            }
            io.out(
                "  \(r.date)\t\(r.channel.rawValue)\t\(pack) v\(version)\t\(shown(r.devices)) devices\tinstalls: \(shown(r.started)) started, \(shown(r.finished)) finished, \(shown(r.failed)) failed\n"
            )
        }
    }
}
