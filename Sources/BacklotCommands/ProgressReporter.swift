import Foundation
import Synchronization

/// Shows how far a long operation is: a redrawn bar on a terminal, a plain line every 10 % otherwise.
final class ProgressReporter: Sendable {
    private let io: any CommandIO
    private let label: String
    private let state = Mutex<(lastDraw: Double, lastDecile: Int, finished: Bool)>((0, -1, false))

    /// Below this size, nothing is printed when not on a terminal (the summary says it all).
    static let plainLineThreshold: UInt64 = 64 << 20

    init(io: any CommandIO, label: String) {
        self.io = io
        self.label = label
    }

    /// Reports `done` of `total` bytes.
    func update(_ done: UInt64, _ total: UInt64) {
        let fraction = total == 0 ? 1 : min(1, Double(done) / Double(total))
        let now = Date().timeIntervalSinceReferenceDate
        if io.isTerminal {
            let draw = state.withLock { s -> Bool in
                guard !s.finished, now - s.lastDraw >= 0.1 || done == total else { return false }
                s.lastDraw = now
                return true
            }
            guard draw else { return }
            let width = 30
            let filled = Int(fraction * Double(width))
            let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
            io.err("\r\(label) [\(bar)] \(String(format: "%3d", Int(fraction * 100)))%  \(ByteCount.format(done)) / \(ByteCount.format(total))\u{1B}[K")
        } else if total >= ProgressReporter.plainLineThreshold {
            let decile = Int(fraction * 10)
            let print = state.withLock { s -> Bool in
                guard !s.finished, decile > s.lastDecile else { return false }
                s.lastDecile = decile
                return true
            }
            if print { io.err("\(label): \(decile * 10)% (\(ByteCount.format(done)) of \(ByteCount.format(total)))\n") }
        }
    }

    /// Ends the bar's line.
    func finish() {
        let wasDrawing = state.withLock { s -> Bool in
            defer { s.finished = true }
            return !s.finished && s.lastDraw > 0
        }
        if let tracked = io as? LineTrackingIO {
            tracked.endOpenLine()   // ended once, even when a warning or an error ended it already
        } else if io.isTerminal && wasDrawing {
            io.err("\n")
        }
    }
}

/// Human-readable byte counts: `512 B`, `1.5 KiB`, `3.20 GiB`.
enum ByteCount {
    static func format(_ n: UInt64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var v = Double(n), u = 0
        while v >= 1024 && u < units.count - 1 { v /= 1024; u += 1 }
        return u == 0 ? "\(n) B" : String(format: v >= 100 ? "%.0f" : v >= 10 ? "%.1f" : "%.2f", v) + " " + units[u]
    }
}
