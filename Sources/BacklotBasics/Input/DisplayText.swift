/// The rule for text people give that others will read in a terminal, a table or a page (a
/// token's label, a rejection's reason): one line, nothing that drives a terminal or reorders
/// what is shown.
///
/// ```swift
/// if let problem = DisplayText.problem(in: label) { throw BacklotError(.invalidInput, "the label \(problem)") }
/// ```
public enum DisplayText {
    /// What is wrong with `text`, said as "holds …", or nil when it may be shown as it is:
    /// control characters (C0 and C1, newlines and tabs included: escapes drive the terminal of
    /// whoever lists it) and the bidirectional controls (U+200E, U+200F, U+202A–U+202E,
    /// U+2066–U+2069, which reorder the text shown around them) are refused.
    public static func problem(in text: String) -> String? {
        for scalar in text.unicodeScalars {
            if scalar.properties.generalCategory == .control {
                return "holds a control character (U+\(hex(scalar))): newlines, tabs and escapes are not allowed"
            }
            if (0x200E...0x200F).contains(scalar.value) || (0x202A...0x202E).contains(scalar.value)
                || (0x2066...0x2069).contains(scalar.value)
            {
                return "holds a bidirectional control (U+\(hex(scalar))), which reorders the text shown around it"
            }
        }
        return nil
    }

    static func hex(_ s: Unicode.Scalar) -> String {
        let digits = String(s.value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }
}
