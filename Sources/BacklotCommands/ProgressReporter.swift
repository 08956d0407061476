import Foundation
import Synchronization

/// Shows how far a long operation is: a redrawn bar on a terminal with the rate and the time
/// left, a plain line every 10 % otherwise; nothing under `--json`, whose standard error carries
/// only warnings and the error (docs/json.md).
///
/// ```
/// uploading [#########---------------------]  31%  66.2 MiB / 215 MiB  12.4 MiB/s  12 s left
/// ```
final class ProgressReporter: Sendable {
    private struct State {
        var lastDraw: Double = 0
        var lastDecile = -1
        var finished = false
        var started: Double? = nil
        var firstDone: UInt64 = 0
        var lastDone: UInt64 = 0
        var lastTotal: UInt64 = 0
    }
    private let io: any CommandIO
    private let label: String
    private let state = Mutex(State())
    /// Under `--json`: no bar and no plain lines.
    private let silent: Bool

    /// Below this size, nothing is printed when not on a terminal (the summary says it all).
    static let plainLineThreshold: UInt64 = 64 << 20

    init(io: any CommandIO, label: String) {
        self.io = io
        self.label = label
        silent = (io as? LineTrackingIO)?.json ?? false
    }

    /// The rate and time left after `elapsed` seconds in which `moved` of the `remaining` bytes went:
    /// `"12.4 MiB/s  12 s left"`, or nil before there is anything to go on.
    static func rateText(moved: UInt64, elapsed: Double, remaining: UInt64) -> String? {
        guard elapsed >= 0.5, moved > 0 else { return nil }
        let rate = Double(moved) / elapsed
        let left = Double(remaining) / rate
        return "\(ByteCount.format(UInt64(rate)))/s  \(remaining == 0 ? "done" : "\(durationText(left)) left")"
    }

    /// `"45 s"`, `"3 min 20 s"`, `"2 h 5 min"`.
    static func durationText(_ seconds: Double) -> String {
        guard seconds.isFinite, seconds < 360_000 else { return "a long time" }
        let s = Int(seconds.rounded(.up))
        if s < 60 { return "\(s) s" }
        if s < 3600 { return "\(s / 60) min \(s % 60) s" }
        return "\(s / 3600) h \(s % 3600 / 60) min"
    }

    /// Reports `done` of `total` bytes.
    func update(_ done: UInt64, _ total: UInt64) {
        draw(done, total, force: false)
    }

    private func draw(_ done: UInt64, _ total: UInt64, force: Bool) {
        guard !silent else { return }
        let fraction = total == 0 ? 1 : min(1, Double(done) / Double(total))
        let now = Date().timeIntervalSinceReferenceDate
        // The rate is measured from the first report (an upload resumed at 70 % starts there).
        let rate = state.withLock { s -> String? in
            if s.started == nil {
                s.started = now
                s.firstDone = done
            }
            s.lastDone = done
            s.lastTotal = total
            return Self.rateText(
                moved: done >= s.firstDone ? done - s.firstDone : 0, elapsed: now - s.started!,
                remaining: total >= done ? total - done : 0)
        }
        if io.isTerminal {
            let draw = state.withLock { s -> Bool in
                guard !s.finished, force || now - s.lastDraw >= 0.1 || done == total else { return false }
                s.lastDraw = now
                return true
            }
            guard draw else { return }
            let width = 30
            let filled = Int(fraction * Double(width))
            let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
            io.err(
                "\r\(label) [\(bar)] \(String(format: "%3d", Int(fraction * 100)))%  \(ByteCount.format(done)) / \(ByteCount.format(total))\(rate.map { "  \($0)" } ?? "")\u{1B}[K"
            )
        } else if total >= ProgressReporter.plainLineThreshold {
            let decile = Int(fraction * 10)
            let print = state.withLock { s -> Bool in
                guard !s.finished, decile > s.lastDecile else { return false }
                s.lastDecile = decile
                return true
            }
            if print {
                io.err(
                    "\(label): \(decile * 10)% (\(ByteCount.format(done)) of \(ByteCount.format(total))\(rate.map { ", \($0)" } ?? ""))\n"
                )
            }
        }
    }

    /// Draws 100 % when the last report fell short of it (the work is done, its last report was
    /// not seen) or, given the work's `total`, when nothing was drawn yet (it ended before its
    /// first report was seen), then ends the bar's line.
    func complete(total: UInt64? = nil) {
        let last = state.withLock { s -> UInt64? in
            guard !s.finished else { return nil }
            if s.started == nil { return total }
            return s.lastDone < s.lastTotal ? s.lastTotal : nil
        }
        if let last { draw(last, last, force: true) }
        finish()
    }

    /// Ends the bar's line.
    func finish() {
        let wasDrawing = state.withLock { s -> Bool in
            defer { s.finished = true }
            return !s.finished && s.lastDraw > 0
        }
        if let tracked = io as? LineTrackingIO {
            tracked.endOpenLine()  // ended once, even when a warning or an error ended it already
        } else if io.isTerminal && wasDrawing {
            io.err("\n")
        }
    }
}

/// Human-readable byte counts: `512 B`, `1.5 KiB`, `3.20 GiB`.
enum ByteCount {
    static func format(_ n: UInt64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var v = Double(n)
        var u = 0
        while v >= 1024 && u < units.count - 1 {
            v /= 1024
            u += 1
        }
        return u == 0 ? "\(n) B" : String(format: v >= 100 ? "%.0f" : v >= 10 ? "%.1f" : "%.2f", v) + " " + units[u]
    }
}
