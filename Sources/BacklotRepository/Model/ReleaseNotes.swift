import BacklotBasics
import BacklotProtocol

/// A version's release notes: lines of text people read (in `releases list`, the dashboard),
/// at most ``longest`` characters, each line as ``DisplayText`` allows (no control or
/// bidirectional character but the newlines between lines).
///
/// ```swift
/// try ReleaseNotes.check("Level 12 reworked.\nFixes the crash on load.")
/// ```
public enum ReleaseNotes {
    /// The longest notes, in characters.
    public static let longest = API.Limits.longestNotes

    /// - Throws: ``BacklotError/Code/invalidInput`` naming the line and what is wrong with it, or the length.
    public static func check(_ notes: String) throws {
        // Counted as JSON Schema's maxLength counts: Unicode scalars.
        guard notes.unicodeScalars.count <= longest else {
            throw BacklotError(
                .invalidInput,
                "release notes have at most \(longest) characters (these have \(notes.unicodeScalars.count))",
                context: "notes", hint: "keep the notes short; link to a longer text from them")
        }
        for (number, line) in notes.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            if let problem = DisplayText.problem(in: String(line)) {
                throw BacklotError(
                    .invalidInput, "line \(number + 1) of the release notes \(problem)", context: "notes",
                    hint: "give lines of text separated by newlines")
            }
        }
    }
}
