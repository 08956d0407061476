import BacklotBasics
import Testing

/// The byte-level path rules.
@Suite struct BytePathTests {
    /// `isSafeRelative` as its documentation defines it: relative, no NUL, and no component empty,
    /// `.` or `..` (the one-pass version must say the same of every path).
    static func definition(_ path: String) -> Bool {
        guard !path.isEmpty, path.utf8.first != BytePath.separator, !path.utf8.contains(0) else { return false }
        return BytePath.components(path).allSatisfy { !$0.isEmpty && !BytePath.isDot($0) && !BytePath.isDotDot($0) }
    }

    @Test func safeRelativePathsAreWhatTheDefinitionSays() {
        for path in [
            "", "a", "a/b", "/a", "a/", "a//b", ".", "..", "...", "a/./b", "a/../b", ".a", "a.", "..a", "a/...",
        ] {
            #expect(BytePath.isSafeRelative(path) == Self.definition(path), "\(path)")
        }
        // Every path of up to 6 pieces from an alphabet that holds each case's bytes.
        let alphabet = ["a", ".", "/", "\u{0}", "\u{E9}", ".."]
        var paths = [""]
        for _ in 0..<6 { paths = paths.flatMap { p in alphabet.map { p + $0 } } }
        let differing = paths.filter { BytePath.isSafeRelative($0) != Self.definition($0) }
        #expect(differing.isEmpty, "\(differing.prefix(5).map { Array($0.utf8) })")
        #expect(paths.count == 46_656 && paths.contains { BytePath.isSafeRelative($0) })
    }
}
