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
    public init() {}

    public func out(_ text: String) { buffers.withLock { $0.out += text } }
    public func err(_ text: String) { buffers.withLock { $0.err += text } }
    public var isTerminal: Bool { false }

    public var standardOutput: String { buffers.withLock { $0.out } }
    public var standardError: String { buffers.withLock { $0.err } }
}
