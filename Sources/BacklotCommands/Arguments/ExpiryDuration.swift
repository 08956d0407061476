import BacklotBasics
import BacklotRepository

/// A duration as `--expires` spells it: a whole number and a unit, `90m`, `12h`, `30d` (or `45s`),
/// from a minute to ten years (what the API accepts).
struct ExpiryDuration: ArgumentValue, CustomStringConvertible {
    let seconds: Int
    let text: String

    /// What the server accepts (``Repository/shortestTokenLifetime`` to ``Repository/longestTokenLifetime``).
    static let range = Int(Tokens.shortestLifetime)...Int(Tokens.longestLifetime)

    init?(argument text: String) {
        guard let unit = text.last, let scale = ["s": 1, "m": 60, "h": 3600, "d": 86_400][String(unit)],
            let n = CheckedInteger.parse(text.dropLast(), as: Int.self)
        else { return nil }
        let (seconds, overflow) = n.multipliedReportingOverflow(by: scale)
        guard !overflow, Self.range.contains(seconds) else { return nil }
        self.seconds = seconds
        self.text = text
    }

    /// A number of seconds in the largest unit that divides it: `86400` is `1d`, `5400` is `90m`.
    static func text(seconds: Int) -> String {
        for (unit, scale) in [("d", 86_400), ("h", 3600), ("m", 60)] where seconds % scale == 0 && seconds >= scale {
            return "\(seconds / scale)\(unit)"
        }
        return "\(seconds)s"
    }

    static var expected: String { "a duration from 60s to 10 years such as 90m, 12h or 30d" }
    var description: String { text }
}
