import BacklotBasics

/// What ``CommandSpec/parse(_:environment:profiles:)`` found: values already converted to their
/// declared types, read through the declarations (`arguments[UploadCommand.app]`).
struct ParsedArguments: Sendable {
    var positionals: [String] = []
    /// Each option's texts as given (for the paths an error may be about).
    var raw: [String: [String]] = [:]
    /// Where a value came from when not from the command line (`$BACKLOT_SERVER`, a profile).
    var sources: [String: String] = [:]
    var flags: Set<String> = []
    private var values: [String: [any Sendable]] = [:]

    /// Converts and records one value of `option`.
    /// - Throws: ``BacklotError/Code/usage`` naming the option, where the value came from and what is expected.
    mutating func add(_ text: String, for option: OptionInfo, from source: String?, command: String) throws {
        guard let value = option.convert(text) else {
            let shown = option.name.contains("token") ? "…" : text
            throw BacklotError(
                .usage,
                "--\(option.name) must be \(option.expected), not '\(shown)'\(source.map { " (from \($0))" } ?? "")",
                context: "backlot \(command)", hint: option.help)
        }
        if !option.repeats {
            values[option.name] = []
            raw[option.name] = []
        }
        values[option.name, default: []].append(value)
        raw[option.name, default: []].append(text)
        if let source { sources[option.name] = source }
    }

    /// The option's value: what was given, else its default (nil for an absent `Option<T?>`, empty
    /// for an absent `Option<[T]>`). The parser refused the line if a required one was missing.
    subscript<Value>(option: Option<Value>) -> Value {
        let given = values[option.info.name] ?? []
        if let repeating = Value.self as? any RepeatingArgumentValue.Type, !given.isEmpty {
            return repeating.combining(given) as! Value
        }
        if let last = given.last as? Value { return last }
        guard let fallback = option.defaultValue() else {
            preconditionFailure(
                "--\(option.info.name) is read but its command's spec does not declare it (or it is required and unchecked)"
            )
        }
        return fallback
    }

    subscript(flag: Flag) -> Bool { flags.contains(flag.info.name) }

    /// Whether the option was given (on the command line, in the environment or a profile).
    func has(_ option: some OptionDeclaration) -> Bool { raw[option.info.name] != nil }

    /// Every text given, for the paths an error may name.
    var allTexts: [String] { positionals + raw.keys.sorted().flatMap { raw[$0] ?? [] } }
}
