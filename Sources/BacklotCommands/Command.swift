import BacklotBasics

/// One `backlot` subcommand: its spec (for parsing and `--help`) and what it does.
protocol Command: Sendable {
    static var spec: CommandSpec { get }
    /// Runs the command; throws a ``BacklotError`` whose code decides the exit status.
    static func run(_ arguments: ParsedArguments, io: any CommandIO) throws
    /// The options that name a container which must exist already (it holds `state.sqlite`):
    /// checked before ``run(_:io:)``, so that a mistyped path is an error (exit status 2) and not
    /// a new, empty container. Commands that create containers (`fetch`, `agent`) name none.
    static var existingContainerOptions: [String] { get }
}

extension Command {
    static var existingContainerOptions: [String] { [] }

    /// A required option's value, or a usage error that names it.
    static func required(_ name: String, in arguments: ParsedArguments) throws -> String {
        guard let value = arguments.values[name] else {
            let option = spec.options.first { $0.name == name }
            throw BacklotError(.usage, "the option --\(name) \(option?.value ?? "VALUE") is required", context: "backlot \(spec.name)",
                               hint: option?.help)
        }
        return value
    }

    static func warn(_ text: String, io: any CommandIO) { io.err("warning: \(text)\n") }
}
