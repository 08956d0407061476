import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Where a command writes: standard output, standard error, and whether stderr is a terminal
/// (progress bars are drawn only then). Tests pass a ``CapturedIO``.
public protocol CommandIO: Sendable {
    func out(_ text: String)
    func err(_ text: String)
    /// True when progress can be drawn in place (stderr is a terminal).
    var isTerminal: Bool { get }
}

/// The process's own standard output and error.
public struct StandardIO: CommandIO {
    public init() {}

    public func out(_ text: String) { FileHandle.standardOutput.write(Data(text.utf8)) }
    public func err(_ text: String) { FileHandle.standardError.write(Data(text.utf8)) }
    public var isTerminal: Bool { isatty(2) == 1 && ProcessInfo.processInfo.environment["TERM"] != "dumb" }
}

/// Collects what a command writes, for tests.
public final class CapturedIO: CommandIO {
    private let buffers = Mutex<(out: String, err: String)>(("", ""))
    /// Whether commands see a terminal (progress bars are then drawn, redrawn with `\r`).
    public let isTerminal: Bool

    /// - Parameter isTerminal: pretend stderr is a terminal, to test what progress bars draw.
    public init(isTerminal: Bool = false) {
        self.isTerminal = isTerminal
    }

    public func out(_ text: String) { buffers.withLock { $0.out += text } }
    public func err(_ text: String) { buffers.withLock { $0.err += text } }

    public var standardOutput: String { buffers.withLock { $0.out } }
    public var standardError: String { buffers.withLock { $0.err } }
}

/// Passes writes on to another ``CommandIO`` and knows whether stderr's last line is still open
/// (a progress bar drawn with `\r` and not ended): anything else written then (to stderr, or to
/// stdout, which shares the terminal) first ends that line.
final class LineTrackingIO: CommandIO {
    private let base: any CommandIO
    private let lineOpen = Mutex<Bool>(false)

    init(_ base: any CommandIO) {
        self.base = base
    }

    var isTerminal: Bool { base.isTerminal }

    func out(_ text: String) {
        lineOpen.withLock { open in
            if open {
                base.err("\n")
                open = false
            }
            base.out(text)
        }
    }

    func err(_ text: String) {
        lineOpen.withLock { open in
            if open && !text.hasPrefix("\r") { base.err("\n") }
            base.err(text)
            if !text.isEmpty { open = !text.hasSuffix("\n") }
        }
    }

    /// Ends the open line, if there is one (a bar that finished, or a failure while one was drawn).
    func endOpenLine() {
        lineOpen.withLock { open in
            if open { base.err("\n") }
            open = false
        }
    }
}
