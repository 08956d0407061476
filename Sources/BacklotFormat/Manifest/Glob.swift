import BacklotBasics

/// UNIX glob patterns on `/`-separated relative paths, as `filePattern` and `fileExclusion` use them.
///
/// - `*` matches any run of characters **within one path component** (it never crosses `/`);
/// - `?` matches one character other than `/`;
/// - `[abc]`, `[a-z]` and `[!abc]` (or `[^abc]`) match one character from (or not from) a set;
/// - `**` as a whole component matches zero or more whole components (`Audio/**/*.wav`);
/// - `\` escapes the next character.
///
/// A leading `.` in a name is matched by `*` like any character (dotfiles are not special).
///
/// Patterns and paths are split on the byte `/` and matched by Unicode scalar, never by grapheme
/// cluster or canonical equivalence (``BytePath``): `?` is one scalar, and an NFC name does not
/// match an NFD pattern.
public struct Glob: Sendable, Hashable {
    /// The pattern text.
    public let pattern: String
    private let components: [[Token]]

    private enum Token: Sendable, Hashable {
        case literal(Unicode.Scalar)
        case any  // ?
        case star  // *
        case set([ClosedRange<Unicode.Scalar>], negated: Bool)
        case globstar  // ** as a whole component
    }

    /// Compiles a pattern.
    /// - Throws: ``SelectorPath/Problem`` for an unclosed `[`.
    public init(_ pattern: String) throws {
        self.pattern = pattern
        var parsed: [[Token]] = []
        for component in BytePath.components(pattern) {
            if BytePath.same(component, "**") {
                parsed.append([.globstar])
                continue
            }
            var tokens: [Token] = []
            var chars = Array(component.unicodeScalars)[...]
            while let c = chars.popFirst() {
                switch c {
                case "*": if tokens.last != .star { tokens.append(.star) }
                case "?": tokens.append(.any)
                case "\\":
                    guard let next = chars.popFirst() else {
                        throw SelectorPath.Problem(
                            rule: "pattern.escape", message: "\"\(pattern)\" ends with a lone '\\'",
                            fix: "remove it or escape something after it")
                    }
                    tokens.append(.literal(next))
                case "[":
                    var negated = false
                    if chars.first == "!" || chars.first == "^" {
                        negated = true
                        chars.removeFirst()
                    }
                    var ranges: [ClosedRange<Unicode.Scalar>] = []
                    var closed = false
                    var first = true
                    while let d = chars.popFirst() {
                        if d == "]" && !first {
                            closed = true
                            break
                        }
                        first = false
                        if chars.count >= 2, chars.first == "-", chars.dropFirst().first != "]" {
                            chars.removeFirst()
                            let hi = chars.removeFirst()
                            guard d <= hi else {
                                throw SelectorPath.Problem(
                                    rule: "pattern.range", message: "\"\(pattern)\" has the reversed range \(d)-\(hi)",
                                    fix: "write \(hi)-\(d)")
                            }
                            ranges.append(d...hi)
                        } else {
                            ranges.append(d...d)
                        }
                    }
                    guard closed else {
                        throw SelectorPath.Problem(
                            rule: "pattern.bracket", message: "\"\(pattern)\" opens '[' without closing it",
                            fix: "close it with ']' or escape it as \\[")
                    }
                    tokens.append(.set(ranges, negated: negated))
                default: tokens.append(.literal(c))
                }
            }
            parsed.append(tokens)
        }
        components = parsed
    }

    /// The leading components without any wildcard: the folder a walk can start from ("" for the root).
    public var literalPrefix: String {
        var out: [String] = []
        for tokens in components.dropLast() {
            var s = ""
            for t in tokens {
                guard case .literal(let c) = t else { return out.joined(separator: "/") }
                s.unicodeScalars.append(c)
            }
            out.append(s)
        }
        return out.joined(separator: "/")
    }

    /// Whether `path` (relative, `/`-separated) matches the whole pattern.
    ///
    /// By dynamic programming over (pattern position, path position), components and characters
    /// alike: time is the pattern's length times the path's, whatever the `**` and `*` (a
    /// backtracking match of `**/**/**/**/**/**/**/**/q` against a path 60 folders deep did not end).
    public func matches(_ path: String) -> Bool {
        let parts = BytePath.components(path).map { Array($0.unicodeScalars) }
        let p = components.count
        let n = parts.count
        // row[j]: whether components[i...] matches parts[j...], for the current i (from the end).
        var next = [Bool](repeating: false, count: n + 1)
        next[n] = true
        for i in stride(from: p - 1, through: 0, by: -1) {
            var row = [Bool](repeating: false, count: n + 1)
            if components[i] == [.globstar] {
                row[n] = next[n]
                for j in stride(from: n - 1, through: 0, by: -1) { row[j] = next[j] || row[j + 1] }
            } else {
                for j in 0..<n where next[j + 1] { row[j] = Glob.matchComponent(components[i], parts[j]) }
            }
            next = row
        }
        return next[0]
    }

    /// Whether one component's tokens match one name, by the same dynamic programming.
    private static func matchComponent(_ tokens: [Token], _ chars: [Unicode.Scalar]) -> Bool {
        let t = tokens.count
        let c = chars.count
        var next = [Bool](repeating: false, count: c + 1)
        next[c] = true
        for i in stride(from: t - 1, through: 0, by: -1) {
            var row = [Bool](repeating: false, count: c + 1)
            switch tokens[i] {
            case .star:
                row[c] = next[c]
                for j in stride(from: c - 1, through: 0, by: -1) { row[j] = next[j] || row[j + 1] }
            case .globstar:
                row = next
            case .any:
                for j in 0..<c { row[j] = next[j + 1] }
            case .literal(let scalar):
                for j in 0..<c { row[j] = chars[j] == scalar && next[j + 1] }
            case .set(let ranges, let negated):
                for j in 0..<c { row[j] = next[j + 1] && ranges.contains(where: { $0.contains(chars[j]) }) != negated }
            }
            next = row
        }
        return next[0]
    }
}
