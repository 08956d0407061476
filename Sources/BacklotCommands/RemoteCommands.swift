import BacklotBasics
import BacklotFormat
import BacklotHTTPClient
import BacklotJSON
import Foundation

/// `backlot upload PACK --server URL --app APP`: creates the next version and uploads the archive.
struct UploadCommand: Command {
    static let spec = CommandSpec(
        name: "upload",
        summary: "Upload a .pack (or an Apple .aar with --manifest) as the next version of its pack (created if needed), then wait for processing.",
        discussion: "A dropped connection is resumed from the byte the server has. Prints the new version; exits 1 if processing fails.",
        arguments: [.init("PACK", help: "A .pack file (its manifest's ID names the pack), or an .aar from ba-package.")],
        options: APIClient.options + [
            .init("app", value: "APP", help: "The app (required)."),
            .init("manifest", value: "FILE", help: "For an .aar: the manifest given to ba-package (its ID names the pack)."),
            .init("no-wait", help: "Return once uploaded, without waiting for processing."),
            .init("json", help: "Print the version as JSON."),
        ])

    static func run(_ arguments: ParsedArguments, io: any CommandIO) throws {
        let api = try APIClient(arguments, command: spec.name)
        let app = try required("app", in: arguments)
        let path = arguments.positionals[0]
        let id: String, size: UInt64
        var versionBody: [JSONMember]
        if path.hasSuffix(".aar") {
            // An Apple Archive from ba-package: stored as is; its manifest says what it is.
            guard let manifestPath = arguments.values["manifest"] else {
                throw BacklotError(.usage, "an .aar needs --manifest FILE (the manifest given to ba-package)", context: "backlot upload")
            }
            let (manifest, _) = try AssetPackManifest.load(path: manifestPath)
            size = try AppleArchiveHeader.check(fileAt: path).size
            id = manifest.assetPackID.rawValue
            let text = try String(contentsOfFile: manifestPath, encoding: .utf8)
            let node = try JSONReader(source: manifestPath).read(text).root
            versionBody = [JSONMember(key: "size", value: .number(size)), JSONMember(key: "format", value: .string("aar")),
                           JSONMember(key: "manifest", value: node)]
        } else {
            let pack = try PackReader(path: path)   // checks header and index before sending anything
            id = pack.index.metadata.assetPackID.rawValue
            size = pack.fileSize
            versionBody = [JSONMember(key: "size", value: .number(size))]
        }
        let base = "/api/apps/\(APIClient.segment(app))/packs"
        try api.call("POST", base, json: .object(["id": .string(id)]), accept: [409])
        let versions = "\(base)/\(APIClient.segment(id))/versions"
        let created = try api.call("POST", versions, json: JSONNode(.object(versionBody)))
        guard case .number(let n)? = created.json["version"]?.kind, let number = Int(n) else {
            throw BacklotError(.io, "the server did not say which version it created")
        }
        let progress = ProgressReporter(io: io, label: "uploading")
        var offset: UInt64 = 0
        var attempts = 0
        while true {
            do {
                try api.call("PUT", "\(versions)/\(number)/archive", body: .file(path: path, offset: offset, length: size - offset),
                             headers: ["Upload-Offset": String(offset), "Content-Type": "application/octet-stream"],
                             progress: { [offset] sent, _ in progress.update(offset + sent, size) })
                break
            } catch let e as BacklotError where (e.code == .io || e.code == .conflict) && attempts < 40 {
                // A broken connection or a server out of reach (503), or — with several servers —
                // the upload still held by a server that stopped (409 until its lease runs out):
                // ask where the upload is and go on from there, backing off up to 3 s a try.
                attempts += 1
                let status = try api.call("GET", "\(versions)/\(number)")
                // The whole archive arrived, only the answer was lost: processing has it.
                if ["PROCESSING", "COMPLETE", "FAILED"].contains(status.json["state"]?.stringValue ?? "") { break }
                guard status.json["state"]?.stringValue == "AWAITING_UPLOAD",
                      case .number(let r)? = status.json["received"]?.kind, let received = UInt64(r) else { throw e }
                io.err("upload interrupted (\(e.message)); resuming at byte \(received)\n")
                offset = received
                usleep(useconds_t(min(200_000 * attempts, 3_000_000)))
            }
        }
        progress.finish()
        var info = try api.call("GET", "\(versions)/\(number)").json
        if !arguments.flag("no-wait") {
            while info["state"]?.stringValue == "PROCESSING" || info["state"]?.stringValue == "AWAITING_UPLOAD" {
                usleep(100_000)
                info = try api.call("GET", "\(versions)/\(number)").json
            }
        }
        if arguments.flag("json") {
            io.out(info.prettyPrinted() + "\n")
        } else {
            io.out("\(app)/\(id) version \(number): \(info["state"]?.stringValue ?? "?")\(info["reason"]?.stringValue.map { " (\($0))" } ?? "")\n")
        }
        if info["state"]?.stringValue == "FAILED" {
            throw BacklotError(.checkFailed, "processing failed: \(info["reason"]?.stringValue ?? "no reason given")", context: "\(app)/\(id)/\(number)")
        }
    }
}

/// `backlot release …`: releases a version on a channel.
struct ReleaseCommand: Command {
    static let spec = CommandSpec(
        name: "release",
        summary: "Release a processed version: at once on internal; as a request for a reviewer on external and production.",
        options: APIClient.options + [
            .init("app", value: "APP", help: "The app (required)."),
            .init("pack", value: "ID", help: "The pack (required)."),
            .init("version", value: "N", help: "The version (required)."),
            .init("channel", value: "CHANNEL", help: "internal, external or production (required)."),
            .init("rollout", value: "PERCENT", help: "Production only: the share of devices that take it."),
        ])

    static func run(_ arguments: ParsedArguments, io: any CommandIO) throws {
        let api = try APIClient(arguments, command: spec.name)
        let app = try required("app", in: arguments), pack = try required("pack", in: arguments), channel = try required("channel", in: arguments)
        let version = try arguments.integer("version", in: 1...Int.max, default: 0, command: spec.name)
        guard version > 0 else { _ = try required("version", in: arguments); return }
        var body: [JSONMember] = [JSONMember(key: "pack", value: .string(pack)), JSONMember(key: "version", value: .number(version)),
                                  JSONMember(key: "channel", value: .string(channel))]
        if let r = arguments.values["rollout"] {
            guard let p = Double(r) else { throw BacklotError(.usage, "--rollout takes a percentage such as 10 or 2.5", context: "backlot release") }
            body.append(JSONMember(key: "rollout", value: .number(p)))
        }
        let r = try api.call("POST", "/api/apps/\(APIClient.segment(app))/releases", json: JSONNode(.object(body)))
        if let request = r.json["request"], case .number(let id)? = request["id"]?.kind {
            io.out("Release request \(id): \(app)/\(pack) version \(version) to \(channel) awaits a reviewer (backlot approve --request \(id) …)\n")
        } else {
            io.out("Released \(app)/\(pack) version \(version) on \(channel); the catalog is re-signed and published.\n")
        }
    }
}

/// `backlot approve --request N …` (or `--reject REASON`).
struct ApproveCommand: Command {
    static let spec = CommandSpec(
        name: "approve",
        summary: "Approve (or with --reject, reject) a pending release request. Needs a reviewer token.",
        options: APIClient.options + [
            .init("app", value: "APP", help: "The app (required)."),
            .init("request", value: "N", help: "The release request's number (required)."),
            .init("reject", value: "REASON", help: "Reject it, saying why."),
        ])

    static func run(_ arguments: ParsedArguments, io: any CommandIO) throws {
        let api = try APIClient(arguments, command: spec.name)
        let app = try required("app", in: arguments), request = try required("request", in: arguments)
        if let reason = arguments.values["reject"] {
            try api.call("POST", "/api/apps/\(APIClient.segment(app))/releases/\(APIClient.segment(request))/reject", json: .object(["reason": .string(reason)]))
            io.out("Rejected release request \(request).\n")
        } else {
            try api.call("POST", "/api/apps/\(APIClient.segment(app))/releases/\(APIClient.segment(request))/approve")
            io.out("Approved release request \(request); the catalog is re-signed and published.\n")
        }
    }
}

/// `backlot versions --app APP --pack ID` (and `versions delete`).
struct VersionsCommand: Command {
    static let spec = CommandSpec(
        name: "versions",
        summary: "List a pack's versions with their state.",
        options: APIClient.options + [
            .init("app", value: "APP", help: "The app (required)."),
            .init("pack", value: "ID", help: "The pack (required)."),
            .init("json", help: "Print JSON."),
        ])

    static func run(_ arguments: ParsedArguments, io: any CommandIO) throws {
        let api = try APIClient(arguments, command: spec.name)
        let app = try required("app", in: arguments), pack = try required("pack", in: arguments)
        let r = try api.call("GET", "/api/apps/\(APIClient.segment(app))/packs/\(APIClient.segment(pack))/versions")
        if arguments.flag("json") { io.out(r.json.prettyPrinted() + "\n"); return }
        for v in r.json["versions"]?.arrayElements ?? [] {
            let number = v["version"].map { $0.serialized() } ?? "?"
            io.out("\(number)\t\(v["state"]?.stringValue ?? "?")\t\(v["size"].map { $0.serialized() } ?? "") bytes\(v["reason"]?.stringValue.map { "\t\($0)" } ?? "")\n")
        }
    }
}

struct VersionsDeleteCommand: Command {
    static let spec = CommandSpec(
        name: "versions delete",
        summary: "Delete a version no channel uses (its archive is garbage-collected). Needs an admin token.",
        options: APIClient.options + [
            .init("app", value: "APP", help: "The app (required)."),
            .init("pack", value: "ID", help: "The pack (required)."),
            .init("version", value: "N", help: "The version (required)."),
        ])

    static func run(_ arguments: ParsedArguments, io: any CommandIO) throws {
        let api = try APIClient(arguments, command: spec.name)
        let app = try required("app", in: arguments), pack = try required("pack", in: arguments), version = try required("version", in: arguments)
        try api.call("DELETE", "/api/apps/\(APIClient.segment(app))/packs/\(APIClient.segment(pack))/versions/\(APIClient.segment(version))")
        io.out("Deleted \(app)/\(pack) version \(version).\n")
    }
}

struct AppsCreateCommand: Command {
    static let spec = CommandSpec(
        name: "apps create",
        summary: "Create an app. Needs an admin token.",
        arguments: [.init("APP", help: "The app's ID (letters, digits, '.', '_', '-').")],
        options: APIClient.options)

    static func run(_ arguments: ParsedArguments, io: any CommandIO) throws {
        let api = try APIClient(arguments, command: spec.name)
        try api.call("POST", "/api/apps", json: .object(["id": .string(arguments.positionals[0])]))
        io.out("Created app \(arguments.positionals[0]).\n")
    }
}

struct TokensCreateCommand: Command {
    static let spec = CommandSpec(
        name: "tokens create",
        summary: "Create an API token for a role (admin, uploader, reviewer, reader). Needs an admin token. The token is printed once.",
        options: APIClient.options + [
            .init("role", value: "ROLE", help: "admin, uploader, reviewer or reader (required)."),
            .init("label", value: "TEXT", help: "What the token is for."),
        ])

    static func run(_ arguments: ParsedArguments, io: any CommandIO) throws {
        let api = try APIClient(arguments, command: spec.name)
        let role = try required("role", in: arguments)
        let r = try api.call("POST", "/api/tokens", json: .object(["role": .string(role), "label": .string(arguments.values["label"] ?? "")]))
        io.out((r.json["token"]?.stringValue ?? "") + "\n")
    }
}
