import BacklotBasics
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// What a command reads and writes: standard output, standard error, whether stderr is a terminal
/// (progress bars are drawn only then), the environment (`BACKLOT_SERVER`, `BACKLOT_TOKEN`, …) and
/// standard input (`--token-file -`). Tests pass a ``CapturedIO`` and set neither the process's
/// environment nor its input.
public protocol CommandIO: Sendable {
    func out(_ text: String)
    func err(_ text: String)
    /// True when progress can be drawn in place (stderr is a terminal).
    var isTerminal: Bool { get }
    /// The environment variables the command sees.
    var environment: [String: String] { get }
    /// Reads standard input to its end, at most `limit` bytes.
    /// - Throws: ``BacklotError/Code/invalidInput`` when there is more; ``BacklotError/Code/io`` when it cannot be read.
    func readStandardInput(atMost limit: Int) throws -> [UInt8]
}

extension CommandIO {
    /// No environment, for writers that only capture output.
    public var environment: [String: String] { [:] }
    /// An empty standard input.
    public func readStandardInput(atMost limit: Int) throws -> [UInt8] { [] }
}

/// The process's own standard output and error.
public struct StandardIO: CommandIO {
    public init() {}

    public func out(_ text: String) { FileHandle.standardOutput.write(Data(text.utf8)) }
    public func err(_ text: String) { FileHandle.standardError.write(Data(text.utf8)) }
    public var isTerminal: Bool { isatty(2) == 1 && ProcessInfo.processInfo.environment["TERM"] != "dumb" }
    public var environment: [String: String] { ProcessInfo.processInfo.environment }

    public func readStandardInput(atMost limit: Int) throws -> [UInt8] {
        let input = FileDescriptor(rawValue: 0, path: "standard input")
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = try buffer.withUnsafeMutableBytes { try input.read(into: $0) }
            bytes += buffer[0..<n]
            if bytes.count > limit {
                throw BacklotError(
                    .invalidInput, "standard input holds more than \(limit) bytes", context: "standard input")
            }
            if n < buffer.count { return bytes }  // the end (read fills the buffer unless it meets the end)
        }
    }
}

/// Collects what a command writes, for tests.
public final class CapturedIO: CommandIO {
    private let buffers = Mutex<(out: String, err: String)>(("", ""))
    /// Whether commands see a terminal (progress bars are then drawn, redrawn with `\r`).
    public let isTerminal: Bool
    public let environment: [String: String]
    private let input: [UInt8]

    /// - Parameters:
    ///   - isTerminal: pretend stderr is a terminal, to test what progress bars draw.
    ///   - environment: the variables the command sees (none by default: the test's own are not leaked in).
    ///   - standardInput: what the command reads from standard input.
    public init(isTerminal: Bool = false, environment: [String: String] = [:], standardInput: [UInt8] = []) {
        self.isTerminal = isTerminal
        self.environment = environment
        self.input = standardInput
    }

    public func readStandardInput(atMost limit: Int) throws -> [UInt8] {
        guard input.count <= limit else {
            throw BacklotError(
                .invalidInput, "standard input holds more than \(limit) bytes", context: "standard input")
        }
        return input
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
    private let secrets = Mutex<[String]>([])
    /// Under `--json` standard error carries only warnings and the error: no bars, no notes.
    let json: Bool

    init(_ base: any CommandIO, json: Bool = false) {
        self.base = base
        self.json = json
    }

    var isTerminal: Bool { base.isTerminal && !json }
    var environment: [String: String] { base.environment }
    func readStandardInput(atMost limit: Int) throws -> [UInt8] { try base.readStandardInput(atMost: limit) }

    /// Remembers a secret (the API token) that no error message may show.
    func addSecret(_ secret: String) {
        guard secret.count >= 8 else { return }
        secrets.withLock { $0.append(secret) }
    }

    /// `text` with every remembered secret replaced by `[token]`.
    func redacted(_ text: String) -> String {
        secrets.withLock { list in list.reduce(text) { $0.replacingOccurrences(of: $1, with: "[token]") } }
    }

    func out(_ text: String) {
        let text = safe(text)
        lineOpen.withLock { open in
            if open {
                base.err("\n")
                open = false
            }
            base.out(text)
        }
    }

    func err(_ text: String) {
        let text = safe(text)
        lineOpen.withLock { open in
            if open && !text.hasPrefix("\r") { base.err("\n") }
            base.err(text)
            if !text.isEmpty { open = !text.hasSuffix("\n") }
        }
    }

    /// Human text with every character a terminal would obey rather than show escaped
    /// (``TerminalText/sanitized(_:)``: a name from a pack, a manifest, a catalog or the API that
    /// holds ESC, BEL, `\r` or a bidirectional control cannot act on the terminal), but for the
    /// line breaks and tabs of the layout and a progress bar's own `\r` and erase-line sequence.
    /// Under `--json` nothing is changed (JSON escapes what it must; a program wants the bytes).
    private func safe(_ text: String) -> String {
        guard !json else { return text }
        var body = Substring(text)
        let redraw = body.hasPrefix("\r")
        if redraw { body = body.dropFirst() }
        let erase = body.hasSuffix("\u{1B}[K")
        if erase { body = body.dropLast(3) }
        return (redraw ? "\r" : "") + TerminalText.sanitized(String(body)) + (erase ? "\u{1B}[K" : "")
    }

    /// Ends the open line, if there is one (a bar that finished, or a failure while one was drawn).
    func endOpenLine() {
        lineOpen.withLock { open in
            if open { base.err("\n") }
            open = false
        }
    }
}
