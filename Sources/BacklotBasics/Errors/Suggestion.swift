/// "Did you mean …?" suggestions for mistyped names (keys, options, commands).
public enum Suggestion {
    /// The candidate closest to `word`: the same ignoring case, else within `maximumEdits` edits.
    public static func closest(to word: String, in candidates: [String], maximumEdits: Int = 2) -> String? {
        if let same = candidates.first(where: { $0.lowercased() == word.lowercased() }) { return same }
        let scored = candidates.map { ($0, editDistance(word.lowercased(), $0.lowercased())) }
        guard let best = scored.min(by: { $0.1 < $1.1 }), best.1 <= maximumEdits else { return nil }
        return best.0
    }

    /// The Levenshtein distance between two strings, in characters.
    public static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a)
        let b = Array(b)
        if a.isEmpty || b.isEmpty { return max(a.count, b.count) }
        var previous = Array(0...b.count)
        for i in 1...a.count {
            var current = [i] + Array(repeating: 0, count: b.count)
            for j in 1...b.count {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
    }
}
