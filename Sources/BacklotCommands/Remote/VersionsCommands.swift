import BacklotBasics
import BacklotProtocol

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
        let list = try api.send(API.listVersions, [.app: app, .pack: pack]).versions.map(VersionOutput.init)
        if arguments[jsonFlag] {
            struct Output: Encodable {
                let app: String
                let pack: String
                let versions: [VersionOutput]
            }
            try io.outJSON(Output(app: app, pack: pack, versions: list))
            return
        }
        if list.isEmpty { io.out("\(app)/\(pack) has no versions.\n") }
        for v in list {
            io.out(
                "\(v.version)\t\(v.state)\t\(v.packBytes) bytes\(v.reason.map { "\t\($0)" } ?? "")\n"
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
        try api.call(API.deleteVersion, [.app: app, .pack: pack, .version: "\(version)"])
        if arguments[jsonFlag] {
            struct Output: Encodable {
                let app: String
                let pack: String
                let version: Int
                var deleted = true
            }
            try io.outJSON(Output(app: app, pack: pack, version: version))
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
        let packs = try api.send(API.listPacks, [.app: app]).packs.map(PackOutput.init)
        if arguments[jsonFlag] {
            struct Output: Encodable {
                let app: String
                let packs: [PackOutput]
            }
            try io.outJSON(Output(app: app, packs: packs))
            return
        }
        if packs.isEmpty { io.out("\(app) has no packs yet (backlot upload creates them).\n") }
        for p in packs {
            io.out(
                "\(p.pack)\t\(p.versionCount) versions\tlatest \(RemoteNumber.text(p.latestVersion))\tcreated \(p.created)\n"
            )
        }
    }
}
