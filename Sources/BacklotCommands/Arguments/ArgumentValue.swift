import BacklotBasics
import BacklotFormat
import Foundation

/// A type an option's text converts to: ``Option`` declarations are generic over it, so that a
/// command reads `arguments[Self.jobs]` as an `Int` that was checked when the line was parsed.
///
/// ```swift
/// enum Role: String, ArgumentValue, CaseIterable { case admin, uploader, reviewer, reader }
/// static let role = Option<Role>("role", "ROLE", help: "The token's role.")
/// ```
protocol ArgumentValue: Sendable {
    /// The value `text` stands for, or nil when it is not one (the parser then names the option
    /// and ``expected``).
    init?(argument text: String)
    /// What a valid value looks like, for errors: "a whole number", "one of a, b or c".
    static var expected: String { get }
    /// Every value there is, when there are few (shell completion offers them); empty otherwise.
    static var allValueStrings: [String] { get }
}

extension ArgumentValue {
    static var allValueStrings: [String] { [] }
}

extension String: ArgumentValue {
    init?(argument text: String) { self = text }
    static var expected: String { "a text" }
}

extension Int: ArgumentValue {
    /// Decimal digits only, through ``CheckedInteger/parse(_:as:)`` (no `+`, no spaces, no `1e3`, nothing past `Int`).
    init?(argument text: String) {
        guard let n = CheckedInteger.parse(text, as: Int.self) else { return nil }
        self = n
    }
    static var expected: String { "a whole number" }
}

extension UInt64: ArgumentValue {
    init?(argument text: String) {
        guard let n = CheckedInteger.parse(text, as: UInt64.self) else { return nil }
        self = n
    }
    static var expected: String { "a whole number" }
}

extension Double: ArgumentValue {
    /// A finite decimal such as `10` or `2.5`.
    init?(argument text: String) {
        guard !text.isEmpty, text.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }), let d = Double(text),
            d.isFinite
        else { return nil }
        self = d
    }
    static var expected: String { "a number such as 10 or 2.5" }
}

/// Enumerations whose raw values are what the command line spells: `--channel production`.
extension ArgumentValue where Self: RawRepresentable, RawValue == String, Self: CaseIterable {
    init?(argument text: String) { self.init(rawValue: text) }
    static var allValueStrings: [String] { allCases.map(\.rawValue) }
    static var expected: String { "one of " + Self.allValueStrings.joinedAsList(or: true) }
}

/// An option that may be left out: `Option<String?>` reads as nil when it is absent.
extension Optional: ArgumentValue where Wrapped: ArgumentValue {
    init?(argument text: String) {
        guard let w = Wrapped(argument: text) else { return nil }
        self = .some(w)
    }
    static var expected: String { Wrapped.expected }
    static var allValueStrings: [String] { Wrapped.allValueStrings }
}

/// An option that may be given several times, or once with commas: `--pack A,B --pack C`.
extension Array: ArgumentValue where Element: ArgumentValue {
    init?(argument text: String) {
        var values: [Element] = []
        for part in text.split(separator: ",", omittingEmptySubsequences: true) {
            guard let v = Element(argument: part.trimmingCharacters(in: .whitespaces)) else { return nil }
            values.append(v)
        }
        self = values
    }
    static var expected: String { Element.expected + " (or several, separated by commas)" }
    static var allValueStrings: [String] { Element.allValueStrings }
}

/// Marks the types whose options are not required when no default is given (``Optional``), and
/// those whose occurrences add up (``Array``).
protocol OptionalArgumentValue { static var absent: Self { get } }
extension Optional: OptionalArgumentValue { static var absent: Self { nil } }

protocol RepeatingArgumentValue {
    static func combining(_ parts: [any Sendable]) -> Self
}
extension Array: RepeatingArgumentValue {
    static func combining(_ parts: [any Sendable]) -> Self { parts.flatMap { $0 as? [Element] ?? [] } }
}

extension Platform: ArgumentValue {}
extension InstallationEventType: ArgumentValue {}
