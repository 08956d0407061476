import BacklotAppClips
import BacklotBasics
import BacklotJSON
import Foundation

/// `backlot clip link BUNDLE_ID [KEY=VALUE]…`: a default App Clip link.
struct ClipLinkCommand: Command {
    static let spec = CommandSpec(
        name: "clip link",
        summary:
            "Build a default App Clip link (https://appclip.apple.com/id?p=BUNDLE_ID&KEY=VALUE…), parameters in order.",
        arguments: [
            .init("BUNDLE_ID", help: "The App Clip's bundle identifier."),
            .init("KEY=VALUE", help: "Parameters, in order.", required: false, repeats: true),
        ],
        options: [demo, jsonFlag])
    static let demo = Flag("demo", help: "A demo link (no parameters allowed).")

    static func run(_ arguments: ParsedArguments, io: any CommandIO) throws {
        let parameters = try arguments.positionals.dropFirst().map { pair -> AppClipLink.Parameter in
            guard let eq = pair.firstIndex(of: "=") else {
                throw BacklotError(.usage, "a parameter is KEY=VALUE, not '\(pair)'", context: "backlot clip link")
            }
            return AppClipLink.Parameter(name: String(pair[..<eq]), value: String(pair[pair.index(after: eq)...]))
        }
        let link = try AppClipLink(
            bundleIdentifier: arguments.positionals[0], parameters: parameters, demo: arguments[demo]
        ).string
        if arguments[jsonFlag] { try io.outJSON(Output(url: link)) } else { io.out(link + "\n") }
    }
}

/// `backlot clip parse URL`: the bundle identifier and parameters of a default App Clip link.
struct ClipParseCommand: Command {
    static let spec = CommandSpec(
        name: "clip parse",
        summary:
            "Read a default App Clip link: the bundle identifier and its parameters (as NSURLComponents.queryItems gives them).",
        arguments: [.init("URL", help: "The link.")],
        options: [demo, jsonFlag])
    static let demo = Flag("demo", help: "Check it as a demo link (no parameters allowed).")

    static func run(_ arguments: ParsedArguments, io: any CommandIO) throws {
        let link = try AppClipLink(parsing: arguments.positionals[0], demo: arguments[demo])
        if arguments[jsonFlag] {
            try io.outJSON(
                Output(
                    bundleIdentifier: link.bundleIdentifier,
                    parameters: link.parameters.map { .init(name: $0.name, value: $0.value) }))
        } else {
            io.out("bundle identifier: \(link.bundleIdentifier)\n")
            for p in link.parameters { io.out("\(p.name) = \(p.value)\n") }
        }
    }
}

/// `backlot clip match URL --experiences FILE`: which advanced experience handles an invocation.
struct ClipMatchCommand: Command {
    static let spec = CommandSpec(
        name: "clip match",
        summary: "Say which registered App Clip experience handles an invocation URL (the longest matching prefix).",
        arguments: [.init("URL", help: "The invocation URL.")],
        options: [experiences, jsonFlag])
    static let experiences = Option<String>(
        "experiences", "FILE", help: "JSON: {\"experiences\": [{\"id\": …, \"url\": …}]}.")

    static func run(_ arguments: ParsedArguments, io: any CommandIO) throws {
        let path = arguments[Self.experiences]
        let bytes = try FileDescriptor.readWholeFile(path, atMost: 16 << 20, what: "the experiences file")
        let experiences = try AppClipExperiences(json: bytes, source: path)
        guard let match = experiences.match(arguments.positionals[0]) else {
            throw BacklotError(.checkFailed, "no registered experience matches", context: arguments.positionals[0])
        }
        if arguments[jsonFlag] {
            try io.outJSON(
                Output(
                    id: match.experience.id, url: match.experience.urlPrefix, tiedWith: match.tiedWith.map(\.id)))
        } else {
            io.out("\(match.experience.id)\t\(match.experience.urlPrefix)\n")
            if !match.tiedWith.isEmpty {
                warn(
                    "equally specific: \(match.tiedWith.map(\.id).joined(separator: ", ")); the first registered wins",
                    io: io)
            }
        }
    }
}

/// `backlot clip handoff --from CLIP_CONTAINER --to APP_CONTAINER`: the clip's packs to the full app.
struct ClipHandoffCommand: Command {
    static let spec = CommandSpec(
        name: "clip handoff",
        summary:
            "Move an App Clip's packs into the full app's container (hard links) where the app's verified catalog lists the same release.",
        discussion:
            "The app's container must have verified its catalog (its first fetch, or the agent's install event). Packs of another release are left for the app to download.",
        options: [from, to, keep, jsonFlag])
    static let from = Option<String>("from", "CLIP_CONTAINER", help: "The App Clip's container.")
    static let to = Option<String>("to", "APP_CONTAINER", help: "The full app's container.")
    static let keep = Flag("keep", help: "Leave the clip's copy in place (the app gets copies, not hard links).")
    static var existingContainerOptions: [any OptionDeclaration] { [from, to] }

    static func run(_ arguments: ParsedArguments, io: any CommandIO) throws {
        let report = try AppClipHandoff.handoff(
            fromClipContainer: arguments[from], toAppContainer: arguments[to],
            keepClipCopy: arguments[keep])
        if arguments[jsonFlag] {
            try io.outJSON(
                Output(moved: report.moved, left: report.left.map { .init(pack: $0.id, reason: $0.reason) }))
        } else {
            for id in report.moved { io.out("moved \(id)\n") }
            for l in report.left { io.out("left \(l.id): \(l.reason)\n") }
            if report.moved.isEmpty && report.left.isEmpty { io.out("the clip's container holds no packs\n") }
        }
    }
}

extension ClipLinkCommand {
    /// `clip link --json`.
    struct Output: Encodable { let url: String }
}

extension ClipParseCommand {
    /// `clip parse --json`.
    struct Output: Encodable {
        struct Parameter: Encodable {
            let name: String
            let value: String
        }
        let bundleIdentifier: String
        let parameters: [Parameter]
    }
}

extension ClipMatchCommand {
    /// `clip match --json`: the experience and those as specific as it.
    struct Output: Encodable {
        let id: String
        let url: String
        let tiedWith: [String]
    }
}

extension ClipHandoffCommand {
    /// `clip handoff --json`.
    struct Output: Encodable {
        struct Left: Encodable {
            let pack: String
            let reason: String
        }
        let moved: [String]
        let left: [Left]
    }
}
