import BacklotBasics
import BacklotCrypto
import BacklotFormat
import BacklotHTTPClient
import BacklotJSON
import BacklotProtocol
import Foundation

/// `backlot upload PACK --app APP`: creates the next version and uploads the archive.
struct UploadCommand: Command {
    static let manifest = Option<String?>(
        "manifest", "FILE", help: "For an .aar: the manifest given to ba-package (its ID names the pack).")
    static let noWait = Flag("no-wait", help: "Return once uploaded, without waiting for processing.")
    static let notes = Option<String?>(
        "notes", "TEXT",
        help: "Release notes for the version (lines of text; releases list and the dashboard show them).")

    static let spec = CommandSpec(
        name: "upload",
        summary:
            "Upload a .pack (or an Apple .aar with --manifest) as the next version of its pack (created if needed), then wait for processing.",
        discussion: """
            A dropped connection is resumed from the byte the server has. The archive's SHA-256 is sent with the
            version: uploading the same file again continues the version whose upload is unfinished from the byte
            the server has ("resuming version 2 at 72 %"), and a file identical to a version already uploaded
            creates nothing ("… is already version 2"). Prints the version; exits 1 if processing fails.
            """,
        arguments: [
            .init("PACK", help: "A .pack file (its manifest's ID names the pack), or an .aar from ba-package.")
        ],
        options: APIClient.options + [PackOptions.app, manifest, notes, noWait, jsonFlag],
        requirements: ServerOptions.requirements)

    static func run(_ arguments: ParsedArguments, io: any CommandIO) throws {
        let api = try APIClient(arguments, io: io, command: spec.name)
        let app = arguments[PackOptions.app]
        let path = arguments.positionals[0]
        let json = arguments[jsonFlag]
        let id: String
        let size: UInt64
        // `POST …/versions`: what the server is told of the archive before it is sent.
        var versionBody: API.VersionCreate
        if path.hasSuffix(".aar") {
            // An Apple Archive from ba-package: stored as is; its manifest says what it is.
            guard let manifestPath = arguments[manifest] else {
                throw usage("an .aar needs --manifest FILE (the manifest given to ba-package)")
            }
            let (manifest, _) = try PackManifest.load(path: manifestPath)
            size = try AppleArchiveHeader.check(fileAt: path).size
            id = manifest.assetPackID.rawValue
            let text = try String(contentsOfFile: manifestPath, encoding: .utf8)
            let node = try JSONReader(source: manifestPath).read(text).root
            versionBody = API.VersionCreate(size: size, format: .appleArchive, manifest: node)
        } else {
            let pack = try PackReader(path: path)  // checks header and index before sending anything
            id = pack.index.metadata.assetPackID.rawValue
            size = pack.fileSize
            versionBody = API.VersionCreate(size: size)
        }
        versionBody.archiveSHA256 = try SHA256.hash(fileAt: path).hex
        versionBody.notes = arguments[notes]
        try api.call(API.createPack, [.app: app], body: API.PackCreate(id: id), accept: [409])
        let answer = try api.call(API.createVersion, [.app: app, .pack: id], body: versionBody)
        let created = try answer.decode(API.Version.self)
        let version = { (number: Int) -> [API.PathParameter: String] in [.app: app, .pack: id, .version: "\(number)"] }
        let number = created.version
        var offset: UInt64 = 0
        var outcome = "created"
        if answer.status == 200 {
            // A version with this archive exists: continue its upload, or say which version it is.
            let state = created.state
            if state == .awaitingUpload {
                offset = min(size, created.received)
                let percent = size == 0 ? 0 : Int(Double(offset) / Double(size) * 100)
                note(
                    "resuming version \(number) at \(percent) % (\(ByteCount.format(offset)) of \(ByteCount.format(size)) are on the server)",
                    io: io)
                outcome = "resumed"
            } else {
                note(
                    "\(path) is already version \(number) of \(app)/\(id) (\(state.rawValue)); nothing was created",
                    io: io)
                // Waited for only while the server is still verifying it.
                let info = try waitForProcessing(
                    api: api, version: version(number), wait: state == .processing && !arguments[noWait], io: io)
                try report(info, app: app, pack: id, number: number, outcome: "existing", json: json, io: io)
                return
            }
        }
        let progress = ProgressReporter(io: io, label: "uploading")
        var backOff = UploadBackOff(received: offset)
        while true {
            do {
                try api.call(
                    API.uploadArchive.method, API.uploadArchive.path(version(number)),
                    body: .file(path: path, offset: offset, length: size - offset),
                    headers: [API.uploadOffsetHeader: String(offset), "Content-Type": "application/octet-stream"],
                    progress: { [offset] sent, _ in progress.update(offset + sent, size) })
                break
            } catch let e as BacklotError where e.code == .io || e.code == .conflict || e.code == .unavailable {
                // A broken connection or a server out of reach or busy (503), or — with several
                // servers — the upload still held by a server that stopped (409 until its lease
                // runs out): ask where the upload is and go on from there (``UploadBackOff``).
                let status = try api.send(API.getVersion, version(number))
                // The whole archive arrived, only the answer was lost: processing has it.
                if status.state != .awaitingUpload { break }
                let received = status.received
                guard let pause = backOff.failed(busy: e.code == .unavailable, received: received, now: Date()) else {
                    throw e
                }
                note("upload interrupted (\(e.message)); resuming at byte \(received)", io: io)
                offset = received
                usleep(useconds_t(pause * 1_000_000))
            }
        }
        progress.complete()
        let info = try waitForProcessing(api: api, version: version(number), wait: !arguments[noWait], io: io)
        try report(info, app: app, pack: id, number: number, outcome: outcome, json: json, io: io)
    }

    /// Polls the version until processing is over (saying so on standard error while it waits).
    static func waitForProcessing(
        api: APIClient, version: [API.PathParameter: String], wait: Bool, io: any CommandIO
    ) throws
        -> API.Version
    {
        guard wait else { return try api.send(API.getVersion, version) }
        // Said before the first look, so that it is said whether processing takes a second or an hour.
        note("verifying on the server…", io: io)
        var info = try api.send(API.getVersion, version)
        // Looked at again after 10 ms, then half as long again each time up to every 50 ms: a
        // small pack processed in a fraction of a second is reported within 50 ms of its end.
        var pause: useconds_t = 10_000
        while info.state == .processing || info.state == .awaitingUpload {
            usleep(pause)
            pause = min(pause * 3 / 2, 50_000)
            info = try api.send(API.getVersion, version)
        }
        return info
    }

    /// - Parameter outcome: `created` (a new version), `resumed` (an unfinished upload continued) or `existing` (an identical archive's version).
    static func report(
        _ info: API.Version, app: String, pack: String, number: Int, outcome: String, json: Bool, io: any CommandIO
    ) throws {
        if json {
            /// The version, with `outcome` beside its fields.
            struct Output: Encodable {
                let version: VersionOutput
                let outcome: String
                enum Keys: CodingKey { case outcome }
                func encode(to encoder: any Encoder) throws {
                    try version.encode(to: encoder)
                    var c = encoder.container(keyedBy: Keys.self)
                    try c.encode(outcome, forKey: .outcome)
                }
            }
            try io.outJSON(Output(version: VersionOutput(info), outcome: outcome))
        } else {
            io.out("\(app)/\(pack) version \(number): \(info.state.rawValue)\(info.reason.map { " (\($0))" } ?? "")\n")
        }
        if info.state == .failed {
            throw BacklotError(
                .checkFailed, "processing failed: \(info.reason ?? "no reason given")",
                context: "\(app)/\(pack)/\(number)")
        }
    }
}

/// `backlot release …`: releases a version on a channel.
struct ReleaseCommand: Command {
    static let rollout = Option<Double?>(
        "rollout", "PERCENT",
        help: "On production: offer it to this share of devices first (raise it with backlot rollout).",
        expected: "a percentage above 0 and at most 100, such as 10 or 2.5",
        check: { $0.map { $0 > 0 && $0 <= 100 } ?? true })

    static let dryRun = Flag(
        "dry-run", help: "Print the catalog change it would make (and whether it needs a reviewer); change nothing.")
    static let spec = CommandSpec(
        name: "release",
        summary:
            "Release a processed version: at once on internal; as a request for a reviewer on external and production.",
        options: APIClient.options + [
            PackOptions.app, PackOptions.pack, PackOptions.version, PackOptions.channel, rollout, dryRun, jsonFlag,
        ],
        requirements: ServerOptions.requirements)

    static func run(_ arguments: ParsedArguments, io: any CommandIO) throws {
        let api = try APIClient(arguments, io: io, command: spec.name)
        let app = arguments[PackOptions.app]
        let pack = arguments[PackOptions.pack]
        let channel = arguments[PackOptions.channel].rawValue
        let version = arguments[PackOptions.version]
        var body = API.ReleaseCreate(
            pack: pack, version: version, channel: arguments[PackOptions.channel],
            rollout: arguments[rollout].map { API.RolloutShare(percent: $0) })
        if arguments[dryRun] {
            body.dryRun = true
            guard let plan = try api.send(API.createRelease, [.app: app], body: body).plan else {
                throw BacklotError(
                    .io, "the server's answer to a dry run is not a plan", context: API.createRelease.operationID,
                    hint: "is it a Backlot server of the same version? (backlot --version)")
            }
            try printPlan(ReleasePlanOutput(plan, app: app), json: arguments[jsonFlag], io: io)
            return
        }
        let request = try api.send(API.createRelease, [.app: app], body: body).request
        if arguments[jsonFlag] {
            struct Output: Encodable {
                let app: String
                let pack: String
                let version: Int
                let channel: String
                let released: Bool
                @NullWhenAbsent var request: API.ReleaseRequest?
            }
            try io.outJSON(
                Output(
                    app: app, pack: pack, version: version, channel: channel, released: request == nil,
                    request: request))
        } else if let id = request?.id {
            io.out(
                "Release request \(id): \(app)/\(pack) version \(version) to \(channel) awaits a reviewer (backlot approve --app \(app) --request \(id), or --pack \(pack) --channel \(channel))\n"
            )
        } else {
            io.out(
                "Released \(app)/\(pack) version \(version) on \(channel); the catalog is re-signed and published.\n")
        }
    }
}

extension ReleaseCommand {
    /// The dry run's catalog change (``ReleasePlanOutput``).
    static func printPlan(_ plan: ReleasePlanOutput, json: Bool, io: any CommandIO) throws {
        if json {
            try io.outJSON(plan)
            return
        }
        io.out(
            """
            Dry run, nothing changed: \(plan.app)/\(plan.pack) on \(plan.channel)
              from            \(plan.from.text)
              to              \(plan.to.text)
              catalog version \(plan.catalogVersion)
              needs approval  \(plan.needsApproval ? "yes" : "no")

            """)
    }
}

/// `backlot approve --app APP --request N` (or `--reject REASON`).
struct ApproveCommand: Command {
    static let request = Option<Int?>(
        "request", "N", in: 1...Int.max, help: "The release request's number (releases list shows them).")
    static let pack = Option<String?>(
        "pack", "ID", help: "With --channel instead of --request: the pack whose pending request this is.")
    static let channel = Option<Channel?>(
        "channel", "CHANNEL", help: "With --pack: the channel of the pending request.")
    static let reject = Option<String?>(
        "reject", "REASON", help: "Reject it instead, saying why (as backlot reject does).")
    /// Either `--request N` or `--pack ID --channel C`.
    static let which: @Sendable (ParsedArguments) -> String? = { a in
        a.has(request) || (a.has(pack) && a.has(channel)) ? nil : "--request N (or --pack ID and --channel CHANNEL)"
    }

    static let spec = CommandSpec(
        name: "approve",
        summary: "Approve (or with --reject, reject) a pending release request. Needs a reviewer token.",
        discussion:
            "Name the request by its number (--request N), or by its pack and channel (--pack ID --channel C: the one request pending there).",
        options: APIClient.options + [PackOptions.app, request, pack, channel, reject, jsonFlag],
        requirements: ServerOptions.requirements + [which])

    /// The request `--request` names, or the one pending for `--pack` on `--channel`.
    static func requestNumber(_ arguments: ParsedArguments, api: APIClient, app: String, command: String) throws -> Int
    {
        if let n = arguments[request] { return n }
        guard let pack = arguments[pack], let channel = arguments[channel] else {
            throw BacklotError(
                .usage, "give --request N, or --pack ID and --channel CHANNEL", context: "backlot \(command)")
        }
        let list = try api.send(
            API.listReleases, [.app: app],
            query: API.ReleaseQuery(channel: channel, status: "pending").items)
        let pending = list.releases.filter { $0.pack == pack && $0.channel == channel && $0.status == "pending" }
        guard let only = pending.first?.id else {
            throw BacklotError(
                .notFound, "no release request of \(pack) is pending on \(channel.rawValue)", context: "\(app)/\(pack)",
                hint: "backlot releases list --app \(app) --pending")
        }
        return only  // one pending request per pack and channel: a newer one supersedes the older
    }

    static func run(_ arguments: ParsedArguments, io: any CommandIO) throws {
        let api = try APIClient(arguments, io: io, command: spec.name)
        let app = arguments[PackOptions.app]
        let number = try requestNumber(arguments, api: api, app: app, command: spec.name)
        if let reason = arguments[reject] {
            try RejectCommand.reject(
                api: api, app: app, request: number, reason: reason, json: arguments[jsonFlag], io: io)
            return
        }
        let approved = try api.send(API.approveRelease, [.app: app, .id: "\(number)"])
        if arguments[jsonFlag] {
            try io.outJSON(approved)
        } else {
            io.out("Approved release request \(number); the catalog is re-signed and published.\n")
        }
    }
}

/// `backlot reject --app APP --request N --reason TEXT`.
struct RejectCommand: Command {
    static let reason = Option<String>("reason", "TEXT", help: "Why (the requester sees it in backlot releases list).")

    static let spec = CommandSpec(
        name: "reject",
        summary: "Reject a pending release request, saying why. Needs a reviewer token.",
        options: APIClient.options + [
            PackOptions.app, ApproveCommand.request, ApproveCommand.pack, ApproveCommand.channel, reason, jsonFlag,
        ],
        requirements: ServerOptions.requirements + [ApproveCommand.which])

    static func run(_ arguments: ParsedArguments, io: any CommandIO) throws {
        let api = try APIClient(arguments, io: io, command: spec.name)
        let app = arguments[PackOptions.app]
        let number = try ApproveCommand.requestNumber(arguments, api: api, app: app, command: spec.name)
        try reject(api: api, app: app, request: number, reason: arguments[reason], json: arguments[jsonFlag], io: io)
    }

    static func reject(api: APIClient, app: String, request: Int, reason: String, json: Bool, io: any CommandIO) throws
    {
        let rejected = try api.send(
            API.rejectRelease, [.app: app, .id: "\(request)"], body: API.Rejection(reason: reason))
        if json {
            try io.outJSON(rejected)
        } else {
            io.out("Rejected release request \(request).\n")
        }
    }
}
