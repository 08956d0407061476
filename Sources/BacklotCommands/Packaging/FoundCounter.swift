/// Says how many things a long listing found so far: a redrawn line on a terminal
/// (`selecting: 120,000 files found`), a plain line every 100,000 otherwise.
final class FoundCounter: Sendable {
    private let io: any CommandIO
    private let label: String

    init(io: any CommandIO, label: String) {
        self.io = io
        self.label = label
    }

    /// Reports `count` files found.
    func update(_ count: Int) {
        if io.isTerminal {
            io.err("\r\(label): \(Self.grouped(count)) files found\u{1B}[K")
        } else if count % 100_000 == 0 {
            io.err("\(label): \(Self.grouped(count)) files found\n")
        }
    }

    /// Ends the counter's line, if one is open.
    func finish() {
        if let tracked = io as? LineTrackingIO { tracked.endOpenLine() }
    }

    /// `1,234,567`.
    static func grouped(_ n: Int) -> String {
        var digits = Array(String(n))
        var out: [Character] = []
        while digits.count > 3 {
            out = [","] + Array(digits.suffix(3)) + out
            digits.removeLast(3)
        }
        return String(digits + out)
    }
}
