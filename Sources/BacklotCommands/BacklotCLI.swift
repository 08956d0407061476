import BacklotBasics
import BacklotClient
import BacklotJSON
import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The `backlot` command-line tool. The executable's `main` calls ``main(_:io:)``; tests call it too.
///
/// ```swift
/// let status = BacklotCLI.main(["verify", "Tutorial.pack"], io: StandardIO())
/// ```
public enum BacklotCLI {
    /// The version printed by `backlot --version`.
    public static let version = BacklotVersion.current

    static let commands: [any Command.Type] = [
        TemplateCommand.self, EvaluateCommand.self, PackageCommand.self, InspectCommand.self,
        VerifyCommand.self, ExtractCommand.self, DiffCommand.self, PlistCheckCommand.self, ServeCommand.self,
        AdminInitCommand.self,
        AppsListCommand.self, AppsCreateCommand.self, AppsSetCommand.self,
        TokensListCommand.self, TokensCreateCommand.self, TokensRevokeCommand.self, TokensRotateCommand.self,
        UploadCommand.self, PacksListCommand.self, VersionsCommand.self, VersionsDeleteCommand.self,
        ReleaseCommand.self, ReleasesListCommand.self, ApproveCommand.self, RejectCommand.self, AuditCommand.self,
        RolloutCommand.self, PhaseCommand.self, RollbackCommand.self, WithdrawCommand.self, AdoptionCommand.self,
        CatalogShowCommand.self, CatalogResignCommand.self, KeysRotateCommand.self,
        DownloadManifestCreateCommand.self, DownloadManifestUpdateCommand.self, FetchCommand.self, StatusCommand.self,
        RemoveCommand.self,
        AgentCommand.self, AgentStatusCommand.self, NotifyCommand.self, SimulateCommand.self, FleetCommand.self,
        ClipSizeCommand.self, ClipLinkCommand.self, ClipParseCommand.self, ClipMatchCommand.self,
        ClipHandoffCommand.self,
        CompletionCommand.self,
    ]

    /// The groups of two-word commands (`apps`, `tokens`, `clip`, …) and their subcommands, in table order.
    static var groups: [(name: String, commands: [any Command.Type])] {
        var order: [String] = []
        var members: [String: [any Command.Type]] = [:]
        for c in commands {
            let words = c.spec.name.split(separator: " ")
            guard words.count == 2 else { continue }
            let group = String(words[0])
            if members[group] == nil { order.append(group) }
            members[group, default: []].append(c)
        }
        return order.map { ($0, members[$0]!) }
    }

    static var overview: String {
        var text = """
            backlot: package, publish, serve and deliver asset packs in the background.

            Usage: backlot COMMAND [ARGUMENTS] [OPTIONS]

            Commands:

            """
        let width = (commands.map { $0.spec.name.count }.max() ?? 12) + 2
        for c in commands {
            text += "  " + c.spec.name.padding(toLength: width, withPad: " ", startingAt: 0) + c.spec.summary + "\n"
        }
        text += """

            Run `backlot COMMAND --help` for a command's options, `backlot GROUP` (\(groups.map(\.name).joined(separator: ", "))) for a group's commands.
              --version    Print backlot's version.
              --help       Print this help.
            Server options come from the command line, else BACKLOT_SERVER, BACKLOT_CA, BACKLOT_TOKEN, else the
            profile (--profile NAME or the default one) in $XDG_CONFIG_HOME/backlot/config.json (see docs/cli.md).
            Exit status: 0 success, 1 failure, 2 usage error or invalid input.

            """
        return text
    }

    /// `backlot GROUP` and `backlot GROUP --help`: the group's subcommands (and the command of the
    /// group's own name, such as `versions`, when there is one).
    static func groupHelp(_ group: String) -> String? {
        guard let members = groups.first(where: { $0.name == group })?.commands else { return nil }
        var text = "backlot \(group): \(members.count) command\(members.count == 1 ? "" : "s")\n\n"
        if let own = commands.first(where: { $0.spec.name == group }) {
            text = own.spec.help + "\nSubcommands:\n"
        } else {
            text += "Usage: backlot \(group) SUBCOMMAND [OPTIONS]\n\nSubcommands:\n"
        }
        let width = (members.map { $0.spec.name.count }.max() ?? 12) + 2
        for c in members {
            text += "  " + c.spec.name.padding(toLength: width, withPad: " ", startingAt: 0) + c.spec.summary + "\n"
        }
        text += "\nRun `backlot \(group) SUBCOMMAND --help` for its options.\n"
        return text
    }

    /// Runs one command line (without the program name) and returns the exit status.
    public static func main(_ arguments: [String], io given: any CommandIO) -> Int32 {
        // Every write goes through one tracker of stderr's open line, so that nothing (an error,
        // a warning, a summary) is printed over a progress bar's line.
        let json = arguments.contains("--json")
        let io = LineTrackingIO(given, json: json)
        guard let first = arguments.first else {
            io.err(overview)
            return 2
        }
        switch first {
        case "-h", "--help", "help":
            let name = arguments.dropFirst().joined(separator: " ")
            if let c = commands.first(where: { $0.spec.name == name }) {
                io.out(c.spec.help)
            } else if let g = groupHelp(name) {
                io.out(g)
            } else {
                io.out(overview)
            }
            return 0
        case "--version":
            io.out("backlot \(version) (\(BacklotVersion.buildConfiguration) build)\n")
            return 0
        default:
            break
        }
        // Two-word commands ("plist check") are matched first.
        var consumed = 1
        var found = commands.first { $0.spec.name == first }
        if arguments.count > 1, let two = commands.first(where: { $0.spec.name == "\(first) \(arguments[1])" }) {
            found = two
            consumed = 2
        }
        if let g = groupHelp(first) {
            // `backlot apps` and `backlot apps --help` list the group; a group that is also a command (`versions`) runs it.
            let rest = arguments.dropFirst()
            // A group that is also a command (`versions`, `agent`) alone: it cannot run without its required options, so it shows the group.
            let cannotRunBare =
                found.map { c in
                    c.spec.infos.contains(where: \.required) || c.spec.arguments.contains(where: \.required)
                } ?? true
            if consumed == 1
                && (found == nil && (rest.isEmpty || rest.allSatisfy { $0 == "--help" || $0 == "-h" })
                    || found != nil && rest.count == 1 && (rest.first == "--help" || rest.first == "-h")
                    || found != nil && rest.isEmpty && cannotRunBare)
            {
                io.out(g)
                return 0
            }
            if consumed == 1 && found == nil, let word = rest.first {
                let names = groups.first { $0.name == first }!.commands.map {
                    String($0.spec.name.split(separator: " ")[1])
                }
                let guess = Suggestion.closest(to: word, in: names)
                let error = BacklotError(
                    .usage,
                    "'\(word)' is not a subcommand of backlot \(first)\(guess.map { "; did you mean '\(first) \($0)'?" } ?? "")",
                    context: "backlot \(first)", hint: "run `backlot \(first)` for the list")
                report(error, json: json, io: io)
                return 2
            }
        }
        guard let command = found else {
            let names = commands.map { $0.spec.name } + ["completion"]
            let guess = Suggestion.closest(to: first, in: names)
            report(
                BacklotError(
                    .usage, "'\(first)' is not a backlot command\(guess.map { "; did you mean '\($0)'?" } ?? "")",
                    hint: "run `backlot --help` for the list"), json: json, io: io)
            return 2
        }
        var parsed = ParsedArguments()
        do {
            let spec = command.spec
            let profiles =
                spec.infos.contains { $0.profileKey != nil } ? try ProfileFile.load(environment: io.environment) : nil
            parsed = try spec.parse(
                Array(arguments.dropFirst(consumed)), environment: io.environment, profiles: profiles)
            if parsed[CommandSpec.help] {
                io.out(spec.help)
                return 0
            }
            for option in command.existingContainerOptions {
                if let directory = parsed.raw[option.info.name]?.last { try ClientContainer.requireExisting(directory) }
            }
            try command.run(parsed, io: io)
            return 0
        } catch let error as BacklotError {
            let error = inputProblem(error, arguments: parsed, command: command.spec.name) ?? error
            report(error, json: json, io: io)
            return error.exitStatus
        } catch {
            report(BacklotError(.io, "\(error)"), json: json, io: io)
            return 1
        }
    }

    /// A path named on the command line that does not exist, or that cannot be read, is the
    /// caller's input being wrong (exit status 2), whichever command tried to open it; the same
    /// failure on a path the command found by itself stays a failure (1).
    static func inputProblem(_ error: BacklotError, arguments: ParsedArguments, command: String) -> BacklotError? {
        guard error.code == .io, let failed = error.context else { return nil }
        func absolute(_ p: String) -> String { URL(fileURLWithPath: p).standardizedFileURL.path }
        func doesNotExist(_ p: String) -> Bool {
            do { return try FileSystem.status(p) == nil } catch { return false }
        }
        // A URL (a catalog, a server) is not a path, even when a failed transfer names it.
        let given = arguments.allTexts.filter { !$0.isEmpty && !$0.contains("://") }
        for path in given {
            let parent = URL(fileURLWithPath: absolute(path)).deletingLastPathComponent().path
            if failed == path || failed == absolute(path) {
                if doesNotExist(path) {
                    return BacklotError(
                        .invalidInput, "there is no such file (it is named on the command line of backlot \(command))",
                        context: path,
                        hint:
                            "check the path\(path.hasPrefix("/") ? "" : " (relative to \(FileManager.default.currentDirectoryPath))")"
                    )
                }
                // Unreadable, or a folder where a file goes (opened as a file: EISDIR). Any other
                // failure about a folder named on the command line (a container without the room
                // to install, say) is the command's, and keeps its message and hint.
                if access(path, R_OK) != 0
                    || ((try? FileSystem.status(path))?.kind == .directory
                        && error.message.hasSuffix(SystemCall.describe(EISDIR)))
                {
                    return BacklotError(
                        .invalidInput, "this input of backlot \(command) cannot be read (\(error.message))",
                        context: path,
                        hint: "check that it is the file you meant and that its permissions let you read it")
                }
            } else if failed == parent || absolute(failed) == parent, doesNotExist(parent) {
                return BacklotError(
                    .invalidInput,
                    "its folder \(parent) does not exist (it is named on the command line of backlot \(command))",
                    context: path,
                    hint: "create \(parent) first, or check the path")
            }
        }
        return nil
    }

    /// The one place errors are printed: a progress bar still drawn (its command failed before
    /// it finished) has its line ended first, so that the message starts on a line of its own.
    /// Under `--json` the error is one JSON object on standard error,
    /// `{"error":{"code","message","context","hint"}}`. No secret the command was given is shown.
    static func report(_ error: BacklotError, json: Bool, io: LineTrackingIO) {
        io.endOpenLine()
        if json {
            let output = ErrorOutput(
                error: .init(
                    code: error.code.name, message: io.redacted(error.message), context: error.context.map(io.redacted),
                    hint: error.hint.map(io.redacted)))
            // An error that JSON cannot hold is not possible: every field is a string.
            io.err(((try? CommandJSON.line(output)) ?? #"{"error":{"code":"io"}}"#) + "\n")
        } else {
            // The context is a path or a name from outside: shown on one line, every control
            // escaped (the message and hint are escaped but for their line breaks by `io`).
            let shown = BacklotError(
                error.code, error.message, context: error.context.map { TerminalText.escaped($0) }, hint: error.hint)
            io.err("error: \(io.redacted(shown.description))\n")
        }
    }

    /// Removes registered temporary files when the process is interrupted, then exits 130 (SIGINT) or 143 (SIGTERM).
    public static func installInterruptCleanup() {
        for sig in [SIGINT, SIGTERM] {
            // No SIG_IGN first: on Linux, libdispatch installs its own handler when the source is
            // registered, and a signal ignored in between would be lost (a service stopped right
            // after it started would never stop). One that comes before registration ends the
            // process, which is what it asks for.
            // Made under the lock that keeps it: a source is not Sendable, so it never leaves it.
            interruptSources.withLock { sources in
                let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
                source.setEventHandler {
                    if let action = interruptAction.withLock({ $0 }) {
                        action(sig)
                        return
                    }
                    TemporaryFiles.shared.removeAll()
                    _exit(128 + sig)  // not exit(): other threads are still running
                }
                source.resume()
                sources.append(source)
            }
        }
    }

    /// Keeps the signal sources alive for the life of the process.
    private static let interruptSources = Mutex<[any DispatchSourceSignal]>([])
    private static let interruptAction = Mutex<(@Sendable (Int32) -> Void)?>(nil)

    /// Replaces the default reaction to SIGINT/SIGTERM (clean up and exit) with `action`, for
    /// long-running commands that stop gracefully.
    static func onInterrupt(_ action: @escaping @Sendable (Int32) -> Void) {
        interruptAction.withLock { $0 = action }
    }
}
