import Foundation

extension CheckedInteger {
    /// Converts a floating-point number from outside (a JSON or property-list real, a stored
    /// `REAL`) to a whole number of `T`, rounding toward zero, refusing infinities, NaN and values
    /// outside `range` (or outside `T`) instead of trapping as `Int(someDouble)` does.
    ///
    /// ```swift
    /// let seconds = try CheckedInteger.convert(1e400, to: Int.self, "BacklotPollInterval", in: 1...86_400)   // throws, names the key
    /// ```
    /// - Throws: ``BacklotError/Code/invalidInput`` (or `code`) naming `what`, the value and the range.
    public static func convert<T: FixedWidthInteger>(
        _ value: Double, to type: T.Type = T.self, _ what: @autoclosure () -> String,
        in range: ClosedRange<T>? = nil, context: String? = nil,
        code: BacklotError.Code = .invalidInput
    ) throws -> T {
        let bounds = range ?? T.min...T.max
        let shown =
            value.isFinite ? "\(value)" : (value.isNaN ? "not a number" : (value < 0 ? "-infinity" : "infinity"))
        // Compared as Doubles first: `T(exactly:)` of a huge or infinite value is nil, never a trap.
        guard value.isFinite, let whole = T(exactly: value.rounded(.towardZero)), bounds.contains(whole) else {
            throw BacklotError(
                code, "\(what()) is \(shown), outside \(bounds.lowerBound)…\(bounds.upperBound)", context: context,
                hint: "give a number in \(bounds.lowerBound)…\(bounds.upperBound)")
        }
        return whole
    }

    /// `a + b`, or `T.max` (`T.min`) when the sum does not fit: for running totals compared with a
    /// cap (bytes used against an allowance), where "more than any cap" is the right answer.
    public static func saturatingAdd<T: FixedWidthInteger>(_ a: T, _ b: T) -> T {
        let (sum, overflow) = a.addingReportingOverflow(b)
        guard overflow else { return sum }
        return b < 0 ? T.min : T.max
    }

    /// A number of seconds for a message ("600 s"), whole, without converting to an integer type
    /// (a stored or configured Double may be huge or infinite).
    /// A number as text for people: `12` when it is whole, `2.5` otherwise (never a trap, whatever
    /// its size).
    public static func numberText(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }

    public static func secondsText(_ seconds: Double) -> String {
        seconds.isFinite
            ? String(format: "%.0f", seconds) : (seconds.isNaN ? "an unknown number of" : "infinitely many")
    }
}
