import BacklotBasics

/// What the parser and `--help` need to know of any option, whatever its value's type.
struct OptionInfo: Sendable {
    let name: String
    let short: Character?
    /// The value's placeholder (`FILE`); nil for a flag.
    let valueName: String?
    let help: String
    let required: Bool
    let repeats: Bool
    /// An environment variable read when the option is not on the command line (`BACKLOT_SERVER`).
    let environment: String?
    /// A key of the selected profile read after the environment (`server`).
    let profileKey: String?
    /// The default shown in `--help`, when there is one worth showing.
    let defaultDescription: String?
    /// Every value there is, for shell completion (enumerations).
    let allValues: [String]
    /// The value of `text`, or nil when it is not valid.
    let convert: @Sendable (String) -> (any Sendable)?
    /// What a valid value looks like, for errors.
    let expected: String

    var isFlag: Bool { valueName == nil }
    /// `--name VALUE` (or `--flag`), as help and errors spell it.
    var spelled: String { "--\(name)" + (valueName.map { " \($0)" } ?? "") }
}

/// Anything a ``CommandSpec`` lists as an option.
protocol OptionDeclaration: Sendable {
    var info: OptionInfo { get }
}
