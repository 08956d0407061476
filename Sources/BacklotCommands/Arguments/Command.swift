import BacklotBasics

/// One `backlot` subcommand: its spec (for parsing and `--help`) and what it does.
protocol Command: Sendable {
    static var spec: CommandSpec { get }
    /// Runs the command; throws a ``BacklotError`` whose code decides the exit status.
    static func run(_ arguments: ParsedArguments, io: any CommandIO) throws
    /// The options that name a container which must exist already (it holds `state.sqlite`):
    /// checked before ``run(_:io:)``, so that a mistyped path is an error (exit status 2) and not
    /// a new, empty container. Commands that create containers (`fetch`, `agent`) name none.
    static var existingContainerOptions: [any OptionDeclaration] { get }
}

extension Command {
    static var existingContainerOptions: [any OptionDeclaration] { [] }

    static func warn(_ text: String, io: any CommandIO) { io.err("warning: \(text)\n") }

    /// A note on standard error (what is going on, what was found), left out under `--json`.
    static func note(_ text: String, io: any CommandIO) {
        if (io as? LineTrackingIO)?.json == true { return }
        io.err(text + "\n")
    }

    /// A usage error of this command.
    static func usage(_ message: String, hint: String? = nil) -> BacklotError {
        BacklotError(.usage, message, context: "backlot \(spec.name)", hint: hint)
    }
}

/// The `--json` flag, declared once: every command that reports something takes it.
let jsonFlag = Flag("json", help: "Print JSON (see docs/json.md); errors are JSON on standard error too.")
