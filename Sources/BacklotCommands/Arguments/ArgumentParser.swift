import BacklotBasics

/// The options and arguments a command takes, used both to parse and to print `--help`.
struct CommandSpec: Sendable {
    static let help = Flag("help", short: "h", help: "Show this help.")

    let name: String
    let summary: String
    let discussion: String?
    let arguments: [Argument]
    let options: [any OptionDeclaration]
    /// Conditions beyond single options (the server group needs a token from one of four places):
    /// each returns what is missing, reported with the missing required options in one error.
    let requirements: [@Sendable (ParsedArguments) -> String?]

    init(
        name: String, summary: String, discussion: String? = nil, arguments: [Argument] = [],
        options: [any OptionDeclaration] = [],
        requirements: [@Sendable (ParsedArguments) -> String?] = []
    ) {
        self.name = name
        self.summary = summary
        self.discussion = discussion
        self.arguments = arguments
        self.options = options + [Self.help]
        self.requirements = requirements
    }

    var infos: [OptionInfo] { options.map(\.info) }

    /// The `--help` text.
    var help: String {
        var usage = "backlot \(name)"
        for a in arguments { usage += " " + (a.required ? a.name : "[\(a.name)]") + (a.repeats ? "…" : "") }
        for o in infos where o.name != "help" {
            usage += " " + (o.required ? o.spelled : "[\(o.spelled)]") + (o.repeats ? "…" : "")
        }
        var text = "\(summary)\n\nUsage: \(usage)\n"
        if let discussion { text += "\n\(discussion)\n" }
        if !arguments.isEmpty {
            text += "\nArguments:\n"
            for a in arguments { text += "  " + pad(a.name, 24) + a.help + "\n" }
        }
        text += "\nOptions:\n"
        for o in infos {
            let flag = (o.short.map { "-\($0), " } ?? "    ") + o.spelled
            var notes: [String] = []
            if o.required { notes.append("required") }
            if let d = o.defaultDescription { notes.append("default \(d)") }
            if let e = o.environment { notes.append("or $\(e)") }
            if o.profileKey != nil { notes.append("or the profile's \(o.profileKey!)") }
            if o.repeats { notes.append("repeats") }
            text += "  " + pad(flag, 24) + o.help + (notes.isEmpty ? "" : " (\(notes.joined(separator: "; ")))") + "\n"
        }
        return text
    }

    private func pad(_ s: String, _ width: Int) -> String {
        s.count >= width ? s + "  " : s + String(repeating: " ", count: width - s.count)
    }

    func usageError(_ message: String, hint: String? = nil) -> BacklotError {
        BacklotError(.usage, message, context: "backlot \(name)", hint: hint ?? "see `backlot \(name) --help`")
    }

    /// Parses the arguments after the command name, converting and checking every value, then
    /// takes what is not on the command line from the environment and the profile (flag > environment > profile).
    /// - Throws: ``BacklotError/Code/usage`` naming the unknown option (with the closest one), a
    ///   value that is not valid, or every missing required option and argument at once.
    func parse(
        _ args: [String], environment: [String: String] = [:], profiles: ProfileFile? = nil
    ) throws -> ParsedArguments {
        var parsed = ParsedArguments()
        let infos = self.infos
        var i = 0
        var onlyPositionals = false
        while i < args.count {
            let arg = args[i]
            i += 1
            if onlyPositionals || arg == "-" || !arg.hasPrefix("-") || arg.count == 1 {
                parsed.positionals.append(arg)
                continue
            }
            if arg == "--" {
                onlyPositionals = true
                continue
            }
            var key = arg
            var inline: String? = nil
            if arg.hasPrefix("--"), let eq = arg.firstIndex(of: "=") {
                key = String(arg[..<eq])
                inline = String(arg[arg.index(after: eq)...])
            }
            let option: OptionInfo?
            if key.hasPrefix("--") {
                option = infos.first { "--\($0.name)" == key }
            } else if key.count == 2 {
                option = infos.first { $0.short == key.last }
            } else {
                option = nil
            }
            guard let option else {
                let hint = Suggestion.closest(to: key, in: infos.map { "--\($0.name)" }, maximumEdits: 3).map {
                    "did you mean \($0)?"
                }
                throw BacklotError(
                    .usage, "unknown option '\(key)'", context: "backlot \(name)",
                    hint: hint ?? "see `backlot \(name) --help`")
            }
            if let valueName = option.valueName {
                let value: String
                if let inline {
                    value = inline
                } else {
                    guard i < args.count else {
                        throw usageError("the option --\(option.name) needs a value (\(valueName))")
                    }
                    // The next word is an option, not this one's value (`--reject --json` forgot
                    // the reason): a value that starts with "--" is given as --name=VALUE.
                    guard !args[i].hasPrefix("--") else {
                        throw BacklotError(
                            .usage,
                            "the option --\(option.name) needs a value (\(valueName)), not the option \(args[i])",
                            context: "backlot \(name)",
                            hint:
                                "give the value after --\(option.name), or as --\(option.name)=VALUE if it starts with --"
                        )
                    }
                    value = args[i]
                    i += 1
                }
                try parsed.add(value, for: option, from: nil, command: name)
            } else {
                if inline != nil { throw usageError("the flag --\(option.name) takes no value") }
                parsed.flags.insert(option.name)
            }
        }
        if parsed[Self.help] { return parsed }
        // Then the environment, then the profile, for what the command line left out.
        let profileName = ServerOptions.profile.info.name
        for option in infos where parsed.raw[option.name] == nil {
            if let variable = option.environment, let value = environment[variable], !value.isEmpty {
                try parsed.add(value, for: option, from: "$\(variable)", command: name)
            } else if let key = option.profileKey, let profiles {
                let selected = try profiles.selected(
                    parsed.raw[profileName]?.last ?? environment[ServerOptions.profile.info.environment!])
                if let (chosen, profile) = selected, let value = profile[key] {
                    try parsed.add(value, for: option, from: "profile \(chosen) in \(profiles.path)", command: name)
                }
            }
        }
        if let named = parsed.raw[profileName]?.last, profiles == nil, infos.contains(where: { $0.name == profileName })
        {
            throw usageError(
                "--profile \(named) names a profile, but there is no profile file",
                hint:
                    "create \(ProfileFile.location(environment: environment) ?? "~/.config/backlot/config.json") (see docs/cli.md)"
            )
        }
        var missing: [String] = infos.filter { $0.required && parsed.raw[$0.name] == nil }.map {
            $0.spelled + ($0.environment.map { " (or $\($0))" } ?? "")
        }
        missing += requirements.compactMap { $0(parsed) }
        let requiredArguments = arguments.filter(\.required)
        if parsed.positionals.count < requiredArguments.count {
            missing += requiredArguments[parsed.positionals.count...].map { "the argument \($0.name)" }
        }
        if !missing.isEmpty {
            let options = infos.filter { $0.required && parsed.raw[$0.name] == nil }
            if missing.count == 1, let only = options.first {
                throw usageError("the option \(missing[0]) is required", hint: only.help)
            }
            if missing.count == 1, parsed.positionals.count < requiredArguments.count {
                let a = requiredArguments[parsed.positionals.count]
                throw usageError("missing argument \(a.name) (\(a.help.prefix(1).lowercased() + a.help.dropFirst()))")
            }
            throw usageError("missing \(missing.joinedAsList())")
        }
        if !(arguments.last?.repeats ?? false), parsed.positionals.count > arguments.count {
            throw usageError("unexpected argument '\(parsed.positionals[arguments.count])'")
        }
        return parsed
    }
}
