import BacklotBasics
import BacklotJSON

/// On or off, as `--four-eyes on|off` spells it.
enum Switch: String, ArgumentValue, CaseIterable {
    case on, off
    var isOn: Bool { self == .on }
}

/// The app object of `--json` output: `{"app","created","fourEyes","quotaBytes"}` (an older server
/// sends the ID alone, or no quota).
func appJSON(_ a: JSONNode) -> JSONNode {
    if let id = a.stringValue {
        return .object(["app": .string(id), "created": .null, "fourEyes": .null, "quotaBytes": .null])
    }
    return .object([
        "app": RemoteJSON.string(a["id"]), "created": RemoteJSON.string(a["created"]),
        "fourEyes": RemoteJSON.value(a["fourEyes"]), "quotaBytes": RemoteJSON.number(a["quotaBytes"]),
    ])
}

/// `backlot apps create APP [--four-eyes]`.
struct AppsCreateCommand: Command {
    static let fourEyes = Flag("four-eyes", help: "A release request cannot be approved by the token that made it.")
    static let spec = CommandSpec(
        name: "apps create",
        summary: "Create an app. Needs an admin token.",
        arguments: [.init("APP", help: "The app's ID (letters, digits, '.', '_', '-').")],
        options: APIClient.options + [fourEyes, jsonFlag],
        requirements: ServerOptions.requirements)

    static func run(_ arguments: ParsedArguments, io: any CommandIO) throws {
        let api = try APIClient(arguments, io: io, command: spec.name)
        let app = arguments.positionals[0]
        let body: JSONNode =
            arguments[fourEyes]
            ? .object(["id": .string(app), "fourEyes": .bool(true)]) : .object(["id": .string(app)])
        let r = try api.call("POST", "/api/apps", json: body)
        if arguments[jsonFlag] {
            io.out(appJSON(r.json).prettyPrinted() + "\n")
        } else {
            io.out(
                "Created app \(app)\(arguments[fourEyes] ? " (four-eyes: a request cannot be approved by the token that made it)" : "").\n"
            )
        }
    }
}

/// `backlot apps list`.
struct AppsListCommand: Command {
    static let spec = CommandSpec(
        name: "apps list",
        summary: "List the apps, when each was created and whether it has the four-eyes rule.",
        options: APIClient.options + [jsonFlag],
        requirements: ServerOptions.requirements)

    static func run(_ arguments: ParsedArguments, io: any CommandIO) throws {
        let api = try APIClient(arguments, io: io, command: spec.name)
        let apps = (try api.call("GET", "/api/apps").json["apps"]?.arrayElements ?? []).map(appJSON)
        if arguments[jsonFlag] {
            io.out(JSONNode.object(["apps": .array(apps)]).prettyPrinted() + "\n")
            return
        }
        if apps.isEmpty { io.out("No apps yet (backlot apps create APP).\n") }
        for a in apps {
            let eyes = a["fourEyes"].map { RemoteJSON.text($0) == "yes" ? "four-eyes" : "-" } ?? "-"
            io.out("\(a["app"]?.stringValue ?? "?")\tcreated \(RemoteJSON.text(a["created"]))\t\(eyes)\n")
        }
    }
}

/// `backlot apps set APP --four-eyes on|off`.
struct AppsSetCommand: Command {
    static let fourEyes = Option<Switch>(
        "four-eyes", "on|off",
        help: "Whether a release request may be approved by the token that made it (off) or not (on).")
    static let spec = CommandSpec(
        name: "apps set",
        summary: "Change an app's settings (the four-eyes rule). Needs an admin token.",
        arguments: [.init("APP", help: "The app's ID.")],
        options: APIClient.options + [fourEyes, jsonFlag],
        requirements: ServerOptions.requirements)

    static func run(_ arguments: ParsedArguments, io: any CommandIO) throws {
        let api = try APIClient(arguments, io: io, command: spec.name)
        let app = arguments.positionals[0]
        let r = try api.call("PATCH", APIClient.app(app), json: .object(["fourEyes": .bool(arguments[fourEyes].isOn)]))
        if arguments[jsonFlag] {
            io.out(appJSON(r.json).prettyPrinted() + "\n")
        } else {
            io.out("\(app): four-eyes \(arguments[fourEyes].rawValue).\n")
        }
    }
}
