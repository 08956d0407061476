import BacklotBasics
import BacklotCrypto
import BacklotStore
import Dispatch
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Delivering a download's outcome to the app when another process (the background agent) ran
/// it. The app calls ``DownloadManager/startListening()`` while it wants the events (Apple: a
/// `BADownloadManager` delegate set in the running app receives them instead of the extension);
/// the agent asks ``DownloadManager/appIsListening`` under ``DownloadManager/withExclusiveControl(_:)``
/// and either posts the event for the app (``DownloadManager/postToApp(_:)``) or wakes the
/// extension. The app starts and stops listening under the same lock, so every event goes to
/// exactly one of the two; an event posted for the app is claimed once, whenever it listens next.
extension DownloadManager {
    /// A download outcome that reached this process from the agent.
    public struct DeliveredError: Error, Sendable, Hashable, CustomStringConvertible {
        /// Apple's `BAErrorCode` raw value, when known.
        public let code: Int?
        public let message: String
        public var description: String { message }
        public init(code: Int?, message: String) {
            self.code = code
            self.message = message
        }
    }

    var listeningLockPath: String { container.path + "/.app-listening.lock" }

    static func ensureEventTable(_ container: ClientContainer) throws {
        try container.db.transaction { tx in
            try tx.execute("""
            CREATE TABLE IF NOT EXISTS url_events (seq INTEGER PRIMARY KEY AUTOINCREMENT, identifier TEXT NOT NULL, url TEXT NOT NULL, file_size INTEGER,
                essential INTEGER NOT NULL, priority INTEGER NOT NULL, kind TEXT NOT NULL, path TEXT, message TEXT, code INTEGER,
                delivered INTEGER NOT NULL DEFAULT 0);
            """)
        }
    }

    /// Starts receiving, through this manager's handler, the outcomes of downloads the agent ran.
    public func startListening(pollInterval: TimeInterval = 0.1) throws {
        try withExclusiveControl {
            try listening.withLock { state in
                guard state == nil else { return }
                let fd = open(listeningLockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
                guard fd >= 0 else { throw SystemCall.error("open", path: listeningLockPath) }
                while flock(fd, LOCK_SH) != 0 { if errno != EINTR { close(fd); throw SystemCall.error("flock", path: listeningLockPath) } }
                let timer = RepeatingTimer(label: "backlot.url-events", every: pollInterval, after: 0) { [weak self] in self?.claimPostedEvents() }
                state = ListeningState(fd: fd, timer: timer)
            }
        }
    }

    /// Stops receiving them; later events go to the extension.
    public func stopListening() throws {
        try withExclusiveControl {
            listening.withLock { state in
                guard let s = state else { return }
                s.timer.cancel()
                flock(s.fd, LOCK_UN)
                close(s.fd)
                state = nil
            }
        }
    }

    /// Whether an app process listens now (call it under ``withExclusiveControl(_:)``).
    public var appIsListening: Bool { FileLock.isHeld(listeningLockPath) }

    /// Posts an outcome for the listening app (call it from the handler, which runs under the
    /// exclusive lock); a finished file is moved aside for the app, which deletes it after its
    /// handler returns.
    ///
    /// With `reservedForExtension`, the outcome is kept but the app does not take it until
    /// ``completeReservation(_:deliveredToExtension:)`` says the extension could not (or a restart
    /// finds the reservation unfinished): an outcome is never lost, and never delivered twice.
    /// - Returns: the outcome's number.
    @discardableResult
    public func postToApp(_ event: Event, reservedForExtension: Bool = false) throws -> Int64 {
        try Self.ensureEventTable(container)
        let d: URLDownload, kind: String
        var path: String? = nil, message: String? = nil, code: Int? = nil
        switch event {
        case .finished(let download, let url):
            d = download
            kind = "finished"
            path = try setAside(url).path
        case .failed(let download, let error):
            d = download
            kind = "failed"
            message = "\(error)"
            code = (error as? BackgroundDownloadError)?.code
        default:
            return 0
        }
        let fileSize = try d.fileSize.map { try CheckedInteger.convert($0, to: Int64.self, "the download's fileSize", in: 0...Int64.max, context: d.identifier) }
        let priority = try CheckedInteger.convert(d.priority, to: Int64.self, "the download's priority", context: d.identifier)
        let storedCode = try code.map { try CheckedInteger.convert($0, to: Int64.self, "the error code", context: d.identifier) }
        return try container.db.transaction { tx in
            _ = try tx.run("INSERT INTO url_events(identifier, url, file_size, essential, priority, kind, path, message, code, delivered) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                           [.text(d.identifier), .text(d.url.absoluteString), fileSize.map { .integer($0) } ?? .null, .integer(d.isEssential ? 1 : 0),
                            .integer(priority), .text(kind), path.map { .text($0) } ?? .null, message.map { .text($0) } ?? .null,
                            storedCode.map { .integer($0) } ?? .null, .integer(reservedForExtension ? 2 : 0)])
            return tx.lastInsertRowID
        }
    }

    /// The file of a posted outcome, if it has one.
    public func postedFile(_ seq: Int64) -> URL? {
        guard let row = try? container.db.read({ try $0.query("SELECT path FROM url_events WHERE seq = ?", [.integer(seq)]) }).first,
              let path = row["path"]?.string else { return nil }
        return URL(fileURLWithPath: path)
    }

    /// Ends a reservation: delivered to the extension (the outcome is done; a file it did not move
    /// is deleted), or not (the app takes it the next time it listens).
    public func completeReservation(_ seq: Int64, deliveredToExtension: Bool) throws {
        try withExclusiveControl {
            try container.db.transaction { tx in
                _ = try tx.run("UPDATE url_events SET delivered = ? WHERE seq = ? AND delivered = 2", [.integer(deliveredToExtension ? 1 : 0), .integer(seq)])
            }
            if deliveredToExtension, let file = postedFile(seq) { unlink(file.path) }
        }
    }

    /// Reservations a stopped or crashed agent did not finish go to the app.
    public func releaseUnfinishedReservations() throws {
        try Self.ensureEventTable(container)
        try withExclusiveControl {
            try container.db.transaction { tx in _ = try tx.run("UPDATE url_events SET delivered = 0 WHERE delivered = 2") }
        }
    }

    /// Moves a finished file out of the download manager's way (it deletes what its handler left),
    /// for a handler that hands it to another process after returning.
    public func setAside(_ url: URL) throws -> URL {
        let dir = container.path + "/downloads/handover"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let target = dir + "/" + UUID().uuidString.lowercased() + ".file"
        try SystemCall.retrying("rename", path: target) { rename(url.path, target) }
        return URL(fileURLWithPath: target)
    }

    /// Delivers every posted event not yet delivered, each exactly once.
    func claimPostedEvents() {
        guard (try? Self.ensureEventTable(container)) != nil else { return }
        _ = try? withExclusiveControl {
            // Stopped listening while this round waited for the lock (or in a handler): the events stay for the next time.
            while listening.withLock({ $0 != nil }), let row = try container.db.transaction({ tx -> Database.Row? in
                guard let r = try tx.query("SELECT * FROM url_events WHERE delivered = 0 ORDER BY seq LIMIT 1").first, let seq = r["seq"]?.int else { return nil }
                guard try tx.run("UPDATE url_events SET delivered = 1 WHERE seq = ? AND delivered = 0", [.integer(seq)]) == 1 else { return nil }
                return r
            }) {
                guard let id = row["identifier"]?.string, let url = row["url"]?.string.flatMap(URL.init(string:)) else { continue }
                // A row with a number out of range (written by another process) is skipped, never a trap.
                guard let d = try? Self.storedDownload(row, identifier: id, url: url, table: "url_events", container: container) else { continue }
                if row["kind"]?.string == "finished", let path = row["path"]?.string {
                    // The extension took it before a crash left its reservation open: it is not delivered twice.
                    guard FileSystem.exists(path) else { continue }
                    handler(.finished(d, URL(fileURLWithPath: path)))
                    unlink(path)   // not moved by the handler: deleted, as on Apple's platforms
                } else {
                    handler(.failed(d, DeliveredError(code: row["code"]?.int.flatMap { Int(exactly: $0) }, message: row["message"]?.string ?? "the download failed")))
                }
            }
        }
    }

    /// Runs `body` (the downloader extension's `downloads(for:)`) while scheduling from any other
    /// process is refused with ``BackgroundDownloadError/schedulingBlockedDuringContentRequest(_:)``.
    public func blockingScheduling<T>(_ body: () throws -> T) throws -> T {
        try container.setMeta("contentRequest", String(getpid()))
        defer { try? container.setMeta("contentRequest", "") }
        return try body()
    }
}

/// The app's listening state: the shared lock it holds and the timer that claims events.
final class ListeningState: Sendable {
    let fd: Int32
    let timer: RepeatingTimer
    init(fd: Int32, timer: RepeatingTimer) {
        self.fd = fd
        self.timer = timer
    }
}
