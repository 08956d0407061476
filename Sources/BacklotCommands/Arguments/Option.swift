import BacklotBasics

/// One `--name VALUE` option, declared once with its type, default, whether it is required and
/// whether it repeats, and read through the declaration: `arguments[Self.app]` is a `String`,
/// `arguments[Self.jobs]` an `Int`, and a misspelt declaration name does not compile.
///
/// - `Option<String>("app", "APP", help: …)`: required (no default, not optional).
/// - `Option<Int>("level", "N", default: 3, in: 1...19, help: …)`: a checked whole number.
/// - `Option<String?>("label", "TEXT", help: …)`: may be left out (nil).
/// - `Option<[String]>("pack", "ID", help: …)`: repeats (`--pack A --pack B` or `--pack A,B`).
///
/// ```swift
/// struct ExtractCommand: Command {
///     static let output = Option<String>("output", "DIR", short: "o", help: "The directory to create.")
///     static let spec = CommandSpec(name: "extract", summary: "…", options: [output])
///     static func run(_ arguments: ParsedArguments, io: any CommandIO) throws {
///         let directory = arguments[output]
///     }
/// }
/// ```
struct Option<Value: ArgumentValue>: OptionDeclaration {
    let info: OptionInfo
    let defaultValue: @Sendable () -> Value?

    /// - Parameters:
    ///   - default: the value when the option is absent; none makes a non-optional option required.
    ///   - showDefault: how `--help` names the default (nil: the default's own text, when simple).
    ///   - environment, profileKey: where the value comes from when it is not on the command line.
    ///   - check: a further condition on the value, with `expected` saying what it is in errors.
    init(
        _ name: String, _ valueName: String, short: Character? = nil,
        default defaultValue: @autoclosure @escaping @Sendable () -> Value? = nil,
        showDefault: String? = nil, environment: String? = nil, profileKey: String? = nil, help: String,
        expected: String? = nil, check: (@Sendable (Value) -> Bool)? = nil
    ) {
        let isOptional = Value.self is any OptionalArgumentValue.Type
        let repeats = Value.self is any RepeatingArgumentValue.Type
        self.defaultValue = { @Sendable in
            if let d = defaultValue() { return d }
            if let o = Value.self as? any OptionalArgumentValue.Type { return o.absent as? Value }
            return RepeatingArgumentValueEmpty.make(Value.self)
        }
        let hasDefault = !isOptional && !repeats && defaultValue() != nil
        info = OptionInfo(
            name: name, short: short, valueName: valueName, help: help,
            required: !isOptional && !repeats && !hasDefault, repeats: repeats,
            environment: environment, profileKey: profileKey,
            defaultDescription: showDefault ?? (hasDefault ? defaultValue().map { "\($0)" } : nil),
            allValues: Value.allValueStrings,
            convert: { text in
                guard let v = Value(argument: text) else { return nil }
                if let check, !check(v) { return nil }
                return v
            },
            expected: expected ?? Value.expected)
    }
}

extension Option where Value == Int {
    /// A whole number within `range`: "--level must be a whole number from 1 to 19, not 'x'".
    init(
        _ name: String, _ valueName: String, short: Character? = nil,
        default defaultValue: @autoclosure @escaping @Sendable () -> Int?,
        showDefault: String? = nil, in range: ClosedRange<Int>, help: String
    ) {
        self.init(
            name, valueName, short: short, default: defaultValue(), showDefault: showDefault, help: help,
            expected: "a whole number from \(range.lowerBound) to \(range.upperBound)", check: { range.contains($0) })
    }
}

extension Option where Value == Int? {
    /// An optional whole number within `range`.
    init(_ name: String, _ valueName: String, short: Character? = nil, in range: ClosedRange<Int>, help: String) {
        self.init(
            name, valueName, short: short, help: help,
            expected: "a whole number from \(range.lowerBound) to \(range.upperBound)",
            check: { $0.map(range.contains) ?? true })
    }
}

/// The empty value of a repeating option that was not given.
enum RepeatingArgumentValueEmpty {
    static func make<V>(_ type: V.Type) -> V? {
        (type as? any RepeatingArgumentValue.Type)?.combining([]) as? V
    }
}
