import BacklotBasics

/// The options and arguments a command takes, used both to parse and to print `--help`.
public struct CommandSpec: Sendable {
    /// One `--name VALUE` option or `--flag`.
    public struct Option: Sendable {
        public let name: String
        public let short: Character?
        /// The value's placeholder (`FILE`); nil for a flag.
        public let value: String?
        public let help: String

        public init(_ name: String, short: Character? = nil, value: String? = nil, help: String) {
            self.name = name
            self.short = short
            self.value = value
            self.help = help
        }
    }

    /// One positional argument.
    public struct Argument: Sendable {
        public let name: String
        public let help: String
        public let required: Bool
        public let repeats: Bool

        public init(_ name: String, help: String, required: Bool = true, repeats: Bool = false) {
            self.name = name
            self.help = help
            self.required = required
            self.repeats = repeats
        }
    }

    public let name: String
    public let summary: String
    public let discussion: String?
    public let arguments: [Argument]
    public let options: [Option]

    public init(name: String, summary: String, discussion: String? = nil, arguments: [Argument] = [], options: [Option] = []) {
        self.name = name
        self.summary = summary
        self.discussion = discussion
        self.arguments = arguments
        self.options = options + [Option("help", short: "h", help: "Show this help.")]
    }

    /// The `--help` text.
    public var help: String {
        var usage = "backlot \(name)"
        for a in arguments { usage += " " + (a.required ? a.name : "[\(a.name)]") + (a.repeats ? "…" : "") }
        for o in options where o.name != "help" {
            usage += " [--\(o.name)\(o.value.map { " \($0)" } ?? "")]"
        }
        var text = "\(summary)\n\nUsage: \(usage)\n"
        if let discussion { text += "\n\(discussion)\n" }
        if !arguments.isEmpty {
            text += "\nArguments:\n"
            for a in arguments { text += "  " + pad(a.name, 24) + a.help + "\n" }
        }
        text += "\nOptions:\n"
        for o in options {
            let flag = (o.short.map { "-\($0), " } ?? "    ") + "--\(o.name)" + (o.value.map { " \($0)" } ?? "")
            text += "  " + pad(flag, 24) + o.help + "\n"
        }
        return text
    }

    private func pad(_ s: String, _ width: Int) -> String {
        s.count >= width ? s + "  " : s + String(repeating: " ", count: width - s.count)
    }

    /// Parses the arguments after the command name.
    /// - Throws: ``BacklotError/Code/usage`` naming the unknown option, the missing value or argument.
    public func parse(_ args: [String]) throws -> ParsedArguments {
        var parsed = ParsedArguments()
        var i = 0
        var onlyPositionals = false
        func usageError(_ message: String) -> BacklotError {
            BacklotError(.usage, message, context: "backlot \(name)", hint: "see `backlot \(name) --help`")
        }
        while i < args.count {
            let arg = args[i]
            i += 1
            if onlyPositionals || arg == "-" || !arg.hasPrefix("-") {
                parsed.positionals.append(arg)
                continue
            }
            if arg == "--" { onlyPositionals = true; continue }
            var key = arg
            var inline: String? = nil
            if arg.hasPrefix("--"), let eq = arg.firstIndex(of: "=") {
                key = String(arg[..<eq])
                inline = String(arg[arg.index(after: eq)...])
            }
            let option: Option?
            if key.hasPrefix("--") {
                option = options.first { "--\($0.name)" == key }
            } else if key.count == 2 {
                option = options.first { $0.short == key.last }
            } else {
                option = nil
            }
            guard let option else {
                let hint = Suggestion.closest(to: key, in: options.map { "--\($0.name)" }, maximumEdits: 3).map { "did you mean \($0)?" }
                throw BacklotError(.usage, "unknown option '\(key)'", context: "backlot \(name)",
                                   hint: hint ?? "see `backlot \(name) --help`")
            }
            if let valueName = option.value {
                let value: String
                if let inline { value = inline } else {
                    guard i < args.count else { throw usageError("the option --\(option.name) needs a value (\(valueName))") }
                    value = args[i]
                    i += 1
                }
                parsed.values[option.name] = value
            } else {
                if inline != nil { throw usageError("the flag --\(option.name) takes no value") }
                parsed.flags.insert(option.name)
            }
        }
        if parsed.flags.contains("help") { return parsed }
        let required = arguments.filter(\.required).count
        if parsed.positionals.count < required {
            let missing = arguments.filter(\.required)[parsed.positionals.count]
            throw usageError("missing argument \(missing.name) (\(missing.help.prefix(1).lowercased() + missing.help.dropFirst()))")
        }
        if !(arguments.last?.repeats ?? false), parsed.positionals.count > arguments.count {
            throw usageError("unexpected argument '\(parsed.positionals[arguments.count])'")
        }
        return parsed
    }
}

/// What ``CommandSpec/parse(_:)`` found.
public struct ParsedArguments: Sendable {
    public var positionals: [String] = []
    public var values: [String: String] = [:]
    public var flags: Set<String> = []

    public func flag(_ name: String) -> Bool { flags.contains(name) }

    /// An integer option within `range`, or `defaultValue` when absent; read with
    /// ``CheckedInteger/parse(_:as:)`` (decimal digits only: no `+`, no spaces, no `1e3`, nothing past `Int`).
    /// - Throws: ``BacklotError/Code/usage`` (exit status 2) naming the option and the range.
    public func integer(_ name: String, in range: ClosedRange<Int>, default defaultValue: Int, command: String) throws -> Int {
        guard let text = values[name] else { return defaultValue }
        guard let n = CheckedInteger.parse(text, as: Int.self), range.contains(n) else {
            throw BacklotError(.usage, "--\(name) must be a whole number from \(range.lowerBound) to \(range.upperBound), not '\(text)'",
                               context: "backlot \(command)")
        }
        return n
    }
}
