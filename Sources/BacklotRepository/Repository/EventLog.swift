import Synchronization

/// Where the repository's services write the server's log lines (processing outcomes with their
/// full errors, deltas made, uploads removed): what API clients are not shown. Set once by the
/// server (``Repository/onEvent(_:)``); lines written before that, or without a server, go nowhere.
final class EventLog: Sendable {
    private let sink = Mutex<(@Sendable (String) -> Void)?>(nil)

    /// Sends every later line to `log`.
    func send(to log: @escaping @Sendable (String) -> Void) {
        sink.withLock { $0 = log }
    }

    /// Writes one line.
    func callAsFunction(_ line: String) {
        let log = sink.withLock { $0 }
        log?(line)
    }
}
