import BacklotBasics
import BacklotJSON
import BacklotRepository

/// `backlot versions --app APP --pack ID`: a pack's versions with their state.
struct VersionsCommand: Command {
    static let spec = CommandSpec(
        name: "versions",
        summary: "List a pack's versions with their state.",
        options: APIClient.options + [PackOptions.app, PackOptions.pack, jsonFlag],
        requirements: ServerOptions.requirements)

    static func run(_ arguments: ParsedArguments, io: any CommandIO) throws {
        let api = try APIClient(arguments, io: io, command: spec.name)
        let app = arguments[PackOptions.app]
        let pack = arguments[PackOptions.pack]
        let r = try api.call("GET", "\(APIClient.pack(app, pack))/versions")
        let list = r.json["versions"]?.arrayElements ?? []
        if arguments[jsonFlag] {
            io.out(
                JSONNode.object([
                    "app": .string(app), "pack": .string(pack), "versions": .array(list.map(RemoteJSON.version)),
                ]).prettyPrinted() + "\n")
            return
        }
        if list.isEmpty { io.out("\(app)/\(pack) has no versions.\n") }
        for v in list {
            io.out(
                "\(RemoteJSON.text(v["version"]))\t\(v["state"]?.stringValue ?? "?")\t\(RemoteJSON.text(v["size"])) bytes\(v["reason"]?.stringValue.map { "\t\($0)" } ?? "")\n"
            )
        }
    }
}

/// `backlot versions delete --app APP --pack ID --version N`.
struct VersionsDeleteCommand: Command {
    static let spec = CommandSpec(
        name: "versions delete",
        summary: "Delete a version no channel uses (its archive is garbage-collected). Needs an admin token.",
        options: APIClient.options + [PackOptions.app, PackOptions.pack, PackOptions.version, jsonFlag],
        requirements: ServerOptions.requirements)

    static func run(_ arguments: ParsedArguments, io: any CommandIO) throws {
        let api = try APIClient(arguments, io: io, command: spec.name)
        let app = arguments[PackOptions.app]
        let pack = arguments[PackOptions.pack]
        let version = arguments[PackOptions.version]
        try api.call("DELETE", "\(APIClient.pack(app, pack))/versions/\(version)")
        if arguments[jsonFlag] {
            io.out(
                JSONNode.object([
                    "app": .string(app), "pack": .string(pack), "version": .number(version), "deleted": .bool(true),
                ]).prettyPrinted() + "\n")
        } else {
            io.out("Deleted \(app)/\(pack) version \(version).\n")
        }
    }
}

/// `backlot packs list --app APP`: an app's packs, with how many versions and the latest.
struct PacksListCommand: Command {
    static let spec = CommandSpec(
        name: "packs list",
        summary: "List an app's packs: when each was created, how many versions it has and the latest.",
        options: APIClient.options + [PackOptions.app, jsonFlag],
        requirements: ServerOptions.requirements)

    static func run(_ arguments: ParsedArguments, io: any CommandIO) throws {
        let api = try APIClient(arguments, io: io, command: spec.name)
        let app = arguments[PackOptions.app]
        let r = try api.call("GET", "\(APIClient.app(app))/packs")
        // Each pack is an object ({"id","created","versions","latest"}); older servers send its ID alone.
        let packs: [JSONNode] = (r.json["packs"]?.arrayElements ?? []).map { p in
            if let id = p.stringValue {
                return .object(["pack": .string(id), "created": .null, "versionCount": .null, "latestVersion": .null])
            }
            return .object([
                "pack": RemoteJSON.string(p["id"]), "created": RemoteJSON.string(p["created"]),
                "versionCount": RemoteJSON.number(p["versions"]), "latestVersion": RemoteJSON.number(p["latest"]),
            ])
        }
        if arguments[jsonFlag] {
            io.out(JSONNode.object(["app": .string(app), "packs": .array(packs)]).prettyPrinted() + "\n")
            return
        }
        if packs.isEmpty { io.out("\(app) has no packs yet (backlot upload creates them).\n") }
        for p in packs {
            io.out(
                "\(p["pack"]?.stringValue ?? "?")\t\(RemoteJSON.text(p["versionCount"])) versions\tlatest \(RemoteJSON.text(p["latestVersion"]))\tcreated \(RemoteJSON.text(p["created"]))\n"
            )
        }
    }
}
