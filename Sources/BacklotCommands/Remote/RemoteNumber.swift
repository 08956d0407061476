import BacklotBasics

/// Numbers of the management API's answers as the text output shows them.
enum RemoteNumber {
    /// `12` for a whole number, `2.5` otherwise.
    static func text(_ value: Double) -> String { CheckedInteger.numberText(value) }

    /// The number, or `-` when there is none.
    static func text<T: BinaryInteger>(_ value: T?) -> String { value.map { String($0) } ?? "-" }
}
