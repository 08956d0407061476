import BacklotBasics
import BacklotProtocol

/// On or off, as `--four-eyes on|off` spells it.
enum Switch: String, ArgumentValue, CaseIterable {
    case on, off
    var isOn: Bool { self == .on }
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
        let created = try api.send(
            API.createApp, body: API.AppCreate(id: app, fourEyes: arguments[fourEyes] ? true : nil))
        if arguments[jsonFlag] {
            try io.outJSON(AppOutput(created))
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
        let list = try api.send(API.listApps)
        if arguments[jsonFlag] {
            try io.outJSON(AppOutput.List(apps: list.apps.map(AppOutput.init)))
            return
        }
        if list.apps.isEmpty { io.out("No apps yet (backlot apps create APP).\n") }
        for a in list.apps {
            io.out("\(a.id)\tcreated \(a.created)\t\(a.fourEyes ? "four-eyes" : "-")\n")
        }
    }
}

/// `backlot apps set APP --four-eyes on|off`.
struct AppsSetCommand: Command {
    static let fourEyes = Option<Switch?>(
        "four-eyes", "on|off",
        help: "Whether a release request may be approved by the person who made it (off) or not (on).")
    static let secondReviewerAbove = Option<Double?>(
        "second-reviewer-above", "PERCENT",
        help:
            "A production rollout step above this share of devices must be made by another person than the one who approved the release (0: no such rule).",
        expected: "0, or a percentage from 0.01 to 100, such as 25",
        check: { $0.map { $0 == 0 || (0.01...100).contains($0) } ?? true })
    /// At least one setting to change.
    static let something: @Sendable (ParsedArguments) -> String? = { a in
        a.has(fourEyes) || a.has(secondReviewerAbove) ? nil : "--four-eyes on|off or --second-reviewer-above PERCENT"
    }
    static let spec = CommandSpec(
        name: "apps set",
        summary:
            "Change an app's settings: the four-eyes rule, the second-reviewer rule for rollouts. Needs an admin token.",
        arguments: [.init("APP", help: "The app's ID.")],
        options: APIClient.options + [fourEyes, secondReviewerAbove, jsonFlag],
        requirements: ServerOptions.requirements + [something])

    static func run(_ arguments: ParsedArguments, io: any CommandIO) throws {
        let api = try APIClient(arguments, io: io, command: spec.name)
        let app = arguments.positionals[0]
        let change = API.AppChange(
            fourEyes: arguments[fourEyes]?.isOn,
            secondReviewerAbove: arguments[secondReviewerAbove].map { API.RolloutShare(percent: $0) })
        let changed = try api.send(API.changeApp, [.app: app], body: change)
        if arguments[jsonFlag] {
            try io.outJSON(AppOutput(changed))
        } else {
            io.out(
                "\(app): four-eyes \(changed.fourEyes ? "on" : "off"); "
                    + (changed.secondReviewerAbove.map {
                        "a rollout above \(RemoteNumber.text($0)) % needs a second reviewer"
                    } ?? "no second-reviewer rule") + ".\n")
        }
    }
}
