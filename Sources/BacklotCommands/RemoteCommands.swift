import BacklotBasics
import BacklotCatalog
import BacklotCrypto
import BacklotFormat
import BacklotHTTPClient
import BacklotJSON
import BacklotRepository
import Foundation

/// `backlot upload PACK --app APP`: creates the next version and uploads the archive.
struct UploadCommand: Command {
    static let manifest = Option<String?>(
        "manifest", "FILE", help: "For an .aar: the manifest given to ba-package (its ID names the pack).")
    static let noWait = Flag("no-wait", help: "Return once uploaded, without waiting for processing.")

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
        options: APIClient.options + [PackOptions.app, manifest, noWait, jsonFlag],
        requirements: ServerOptions.requirements)

    static func run(_ arguments: ParsedArguments, io: any CommandIO) throws {
        let api = try APIClient(arguments, io: io, command: spec.name)
        let app = arguments[PackOptions.app]
        let path = arguments.positionals[0]
        let json = arguments[jsonFlag]
        let id: String
        let size: UInt64
        var versionBody: [JSONMember]
        if path.hasSuffix(".aar") {
            // An Apple Archive from ba-package: stored as is; its manifest says what it is.
            guard let manifestPath = arguments[manifest] else {
                throw usage("an .aar needs --manifest FILE (the manifest given to ba-package)")
            }
            let (manifest, _) = try AssetPackManifest.load(path: manifestPath)
            size = try AppleArchiveHeader.check(fileAt: path).size
            id = manifest.assetPackID.rawValue
            let text = try String(contentsOfFile: manifestPath, encoding: .utf8)
            let node = try JSONReader(source: manifestPath).read(text).root
            versionBody = [
                JSONMember(key: "size", value: .number(size)), JSONMember(key: "format", value: .string("aar")),
                JSONMember(key: "manifest", value: node),
            ]
        } else {
            let pack = try PackReader(path: path)  // checks header and index before sending anything
            id = pack.index.metadata.assetPackID.rawValue
            size = pack.fileSize
            versionBody = [JSONMember(key: "size", value: .number(size))]
        }
        let digest = try SHA256.hash(fileAt: path).hex
        versionBody.append(JSONMember(key: "archiveSHA256", value: .string(digest)))
        let base = "\(APIClient.app(app))/packs"
        try api.call("POST", base, json: .object(["id": .string(id)]), accept: [409])
        let versions = "\(base)/\(APIClient.segment(id))/versions"
        let created = try api.call("POST", versions, json: JSONNode(.object(versionBody)))
        guard let number = created.json["version"]?.integer(as: Int.self) else {
            throw BacklotError(.io, "the server did not say which version it created")
        }
        var offset: UInt64 = 0
        var outcome = "created"
        if created.status == 200 {
            // A version with this archive exists: continue its upload, or say which version it is.
            let state = created.json["state"]?.stringValue ?? "?"
            if state == "AWAITING_UPLOAD" {
                offset = min(size, created.json["received"]?.integer(as: UInt64.self) ?? 0)
                let percent = size == 0 ? 0 : Int(Double(offset) / Double(size) * 100)
                note(
                    "resuming version \(number) at \(percent) % (\(ByteCount.format(offset)) of \(ByteCount.format(size)) are on the server)",
                    io: io)
                outcome = "resumed"
            } else {
                note("\(path) is already version \(number) of \(app)/\(id) (\(state)); nothing was created", io: io)
                // Waited for only while the server is still verifying it.
                let info = try waitForProcessing(
                    api: api, path: "\(versions)/\(number)", wait: state == "PROCESSING" && !arguments[noWait], io: io)
                try report(info, app: app, pack: id, number: number, outcome: "existing", json: json, io: io)
                return
            }
        }
        let progress = ProgressReporter(io: io, label: "uploading")
        var attempts = 0
        while true {
            do {
                try api.call(
                    "PUT", "\(versions)/\(number)/archive",
                    body: .file(path: path, offset: offset, length: size - offset),
                    headers: ["Upload-Offset": String(offset), "Content-Type": "application/octet-stream"],
                    progress: { [offset] sent, _ in progress.update(offset + sent, size) })
                break
            } catch let e as BacklotError
                where (e.code == .io || e.code == .conflict || e.code == .unavailable) && attempts < 40
            {
                // A broken connection or a server out of reach (503), or — with several servers —
                // the upload still held by a server that stopped (409 until its lease runs out):
                // ask where the upload is and go on from there, backing off up to 3 s a try.
                attempts += 1
                let status = try api.call("GET", "\(versions)/\(number)")
                // The whole archive arrived, only the answer was lost: processing has it.
                if ["PROCESSING", "COMPLETE", "FAILED"].contains(status.json["state"]?.stringValue ?? "") { break }
                guard status.json["state"]?.stringValue == "AWAITING_UPLOAD",
                    let received = status.json["received"]?.integer(as: UInt64.self)
                else { throw e }
                note("upload interrupted (\(e.message)); resuming at byte \(received)", io: io)
                offset = received
                usleep(useconds_t(min(200_000 * attempts, 3_000_000)))
            }
        }
        progress.complete()
        let info = try waitForProcessing(api: api, path: "\(versions)/\(number)", wait: !arguments[noWait], io: io)
        try report(info, app: app, pack: id, number: number, outcome: outcome, json: json, io: io)
    }

    /// Polls the version until processing is over (saying so on standard error while it waits).
    static func waitForProcessing(api: APIClient, path: String, wait: Bool, io: any CommandIO) throws -> JSONNode {
        guard wait else { return try api.call("GET", path).json }
        // Said before the first look, so that it is said whether processing takes a second or an hour.
        note("verifying on the server…", io: io)
        var info = try api.call("GET", path).json
        while info["state"]?.stringValue == "PROCESSING" || info["state"]?.stringValue == "AWAITING_UPLOAD" {
            usleep(100_000)
            info = try api.call("GET", path).json
        }
        return info
    }

    /// - Parameter outcome: `created` (a new version), `resumed` (an unfinished upload continued) or `existing` (an identical archive's version).
    static func report(
        _ info: JSONNode, app: String, pack: String, number: Int, outcome: String, json: Bool, io: any CommandIO
    ) throws {
        if json {
            var node = RemoteJSON.version(info)
            if case .object(let members) = node.kind {
                node = JSONNode(.object(members + [JSONMember(key: "outcome", value: .string(outcome))]))
            }
            io.out(node.prettyPrinted() + "\n")
        } else {
            io.out(
                "\(app)/\(pack) version \(number): \(info["state"]?.stringValue ?? "?")\(info["reason"]?.stringValue.map { " (\($0))" } ?? "")\n"
            )
        }
        if info["state"]?.stringValue == "FAILED" {
            throw BacklotError(
                .checkFailed, "processing failed: \(info["reason"]?.stringValue ?? "no reason given")",
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
        var body: [JSONMember] = [
            JSONMember(key: "pack", value: .string(pack)), JSONMember(key: "version", value: .number(version)),
            JSONMember(key: "channel", value: .string(channel)),
        ]
        if let r = arguments[rollout] { body.append(JSONMember(key: "rollout", value: .number(r))) }
        if arguments[dryRun] {
            body.append(JSONMember(key: "dryRun", value: .bool(true)))
            let plan = try api.call("POST", "\(APIClient.app(app))/releases", json: JSONNode(.object(body))).json
            try printPlan(plan, app: app, json: arguments[jsonFlag], io: io)
            return
        }
        let r = try api.call("POST", "\(APIClient.app(app))/releases", json: JSONNode(.object(body)))
        let request = r.json["request"]
        if arguments[jsonFlag] {
            io.out(
                JSONNode.object([
                    "app": .string(app), "pack": .string(pack), "version": .number(version),
                    "channel": .string(channel),
                    "released": .bool(request == nil), "request": request.map(RemoteJSON.request) ?? .null,
                ]).prettyPrinted() + "\n")
        } else if let id = request?["id"]?.integer(as: Int.self) {
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
    /// The dry run's catalog change: `{"dryRun","needsApproval","change":{"channel","pack","from","to","catalogVersion"}}`.
    static func printPlan(_ plan: JSONNode, app: String, json: Bool, io: any CommandIO) throws {
        let change = plan["change"]
        let from = change?["from"]
        let to = change?["to"]
        func side(_ s: JSONNode?) -> JSONNode {
            .object([
                "version": RemoteJSON.number(s?["version"]), "rolloutPercent": RemoteJSON.number(s?["rolloutPercent"]),
            ])
        }
        if json {
            io.out(
                JSONNode.object([
                    "dryRun": .bool(true), "app": .string(app),
                    "needsApproval": RemoteJSON.value(plan["needsApproval"]),
                    "channel": RemoteJSON.string(change?["channel"]), "pack": RemoteJSON.string(change?["pack"]),
                    "from": side(from), "to": side(to), "catalogVersion": RemoteJSON.number(change?["catalogVersion"]),
                ]).prettyPrinted() + "\n")
            return
        }
        func text(_ s: JSONNode?) -> String {
            guard let v = s?["version"], v.kind != .null else { return "nothing" }
            let p = s?["rolloutPercent"].flatMap { $0.kind == .null ? nil : RemoteJSON.text($0) }
            return "version \(RemoteJSON.text(v))" + (p.map { " at \($0) %" } ?? " for every device")
        }
        io.out(
            """
            Dry run, nothing changed: \(app)/\(change?["pack"]?.stringValue ?? "?") on \(change?["channel"]?.stringValue ?? "?")
              from            \(text(from))
              to              \(text(to))
              catalog version \(RemoteJSON.text(change?["catalogVersion"]))
              needs approval  \(RemoteJSON.text(plan["needsApproval"]))

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
        guard let pack = arguments[pack], let channel = arguments[channel]?.rawValue else {
            throw BacklotError(
                .usage, "give --request N, or --pack ID and --channel CHANNEL", context: "backlot \(command)")
        }
        let list =
            try api.call("GET", "\(APIClient.app(app))/releases?channel=\(channel)&status=pending").json["releases"]?
            .arrayElements ?? []
        let pending = list.filter {
            $0["pack"]?.stringValue == pack && $0["channel"]?.stringValue == channel
                && $0["status"]?.stringValue == "pending"
        }
        guard let only = pending.first?["id"]?.integer(as: Int.self) else {
            throw BacklotError(
                .notFound, "no release request of \(pack) is pending on \(channel)", context: "\(app)/\(pack)",
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
        let r = try api.call("POST", "\(APIClient.app(app))/releases/\(number)/approve")
        if arguments[jsonFlag] {
            io.out(RemoteJSON.request(r.json).prettyPrinted() + "\n")
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
        let r = try api.call(
            "POST", "\(APIClient.app(app))/releases/\(request)/reject", json: .object(["reason": .string(reason)]))
        if json {
            io.out(RemoteJSON.request(r.json).prettyPrinted() + "\n")
        } else {
            io.out("Rejected release request \(request).\n")
        }
    }
}
