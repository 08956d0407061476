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
    public func matches(_ path: String) -> Bool {
        let parts = BytePath.components(path).map { Array($0.unicodeScalars) }
        return match(components[...], parts[...])
    }

    private func match(_ pattern: ArraySlice<[Token]>, _ parts: ArraySlice<[Unicode.Scalar]>) -> Bool {
        guard let first = pattern.first else { return parts.isEmpty }
        if first == [.globstar] {
            var rest = parts
            while true {
                if match(pattern.dropFirst(), rest) { return true }
                guard !rest.isEmpty else { return false }
                rest = rest.dropFirst()
            }
        }
        guard let part = parts.first, Glob.matchComponent(first[...], part[...]) else { return false }
        return match(pattern.dropFirst(), parts.dropFirst())
    }

    private static func matchComponent(_ tokens: ArraySlice<Token>, _ chars: ArraySlice<Unicode.Scalar>) -> Bool {
        guard let t = tokens.first else { return chars.isEmpty }
        switch t {
        case .star:
            var rest = chars
            while true {
                if matchComponent(tokens.dropFirst(), rest) { return true }
                guard !rest.isEmpty else { return false }
                rest = rest.dropFirst()
            }
        case .globstar:
            return matchComponent(tokens.dropFirst(), chars)
        case .any:
            guard !chars.isEmpty else { return false }
            return matchComponent(tokens.dropFirst(), chars.dropFirst())
        case .literal(let c):
            guard chars.first == c else { return false }
            return matchComponent(tokens.dropFirst(), chars.dropFirst())
        case .set(let ranges, let negated):
            guard let c = chars.first else { return false }
            guard ranges.contains(where: { $0.contains(c) }) != negated else { return false }
            return matchComponent(tokens.dropFirst(), chars.dropFirst())
        }
    }
}
