import BacklotBasics
import BacklotContainer
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

    /// The states of a recorded outcome (`url_events.delivered`).
    enum OutcomeState {
        /// Posted for the app, which claims it the next time it listens.
        static let forApp: Int64 = 0
        /// Delivered; nothing more to do.
        static let done: Int64 = 1
        /// Reserved for the extension, whose call has not claimed it yet.
        static let reserved: Int64 = 2
        /// Recorded in the transaction that retired the download, not handed to anyone yet.
        static let recorded: Int64 = 3
        /// Claimed by the extension's process; the agent has not closed the reservation yet.
        static let takenByExtension: Int64 = 4
    }

    var roleName: String { role == .agent ? "agent" : "app" }

    /// Inserts an outcome record (in the caller's transaction, the one that retires the download).
    static func insertOutcome(
        _ tx: inout Database.Connection, _ d: URLDownload, kind: String, path: String?, staged: String?,
        message: String?, code: Int?, state: Int64, owner: String
    ) throws -> Int64 {
        let fileSize = try d.fileSize.map {
            try CheckedInteger.convert(
                $0, to: Int64.self, "the download's fileSize", in: 0...Int64.max, context: d.identifier)
        }
        let priority = try CheckedInteger.convert(
            d.priority, to: Int64.self, "the download's priority", context: d.identifier)
        let storedCode = try code.map {
            try CheckedInteger.convert($0, to: Int64.self, "the error code", context: d.identifier)
        }
        _ = try tx.run(
            """
            INSERT INTO url_events(identifier, url, file_size, essential, priority, kind, path, message, code, delivered, staged, owner)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """,
            [
                .text(d.identifier), .text(d.url.absoluteString), fileSize.map { .integer($0) } ?? .null,
                .integer(d.isEssential ? 1 : 0),
                .integer(priority), .text(kind), path.map { .text($0) } ?? .null, message.map { .text($0) } ?? .null,
                storedCode.map { .integer($0) } ?? .null, .integer(state), staged.map { .text($0) } ?? .null,
                .text(owner),
            ])
        return tx.lastInsertRowID
    }

    /// Retires a download and records its outcome in one transaction: after it commits, the
    /// outcome is delivered even if the process dies at once (``deliverRecordedOutcomes()``).
    /// A finished download's file stays at `staged` (its partial file) until
    /// ``completeStagings(for:)`` renames it to its hand-over path.
    /// - Returns: the record's number, or nil when the download was no longer scheduled (cancelled).
    /// - Parameter within: more work for the same transaction, once the download's row is found
    ///   (the install-size cap and the installed bytes of a finished download); what it throws
    ///   leaves everything as it was.
    func retire(
        _ d: URLDownload, kind: String, staged: String?, message: String?, code: Int?,
        within: ((inout Database.Connection) throws -> Void)? = nil
    ) throws -> Int64? {
        let path: String?
        if staged != nil {
            let dir = container.layout.handoverFolder
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            path = dir + "/" + UUID().uuidString.lowercased() + ".file"
        } else {
            path = nil
        }
        return try container.db.transaction { tx -> Int64? in
            guard try tx.run("DELETE FROM url_downloads WHERE identifier = ?", [.text(d.identifier)]) == 1 else {
                return nil
            }
            try within?(&tx)  // a throw rolls the whole transaction back, the delete included
            _ = try tx.run("DELETE FROM url_retries WHERE identifier = ?", [.text(d.identifier)])
            return try Self.insertOutcome(
                &tx, d, kind: kind, path: path, staged: staged, message: message, code: code,
                state: OutcomeState.recorded, owner: roleName)
        }
    }

    /// Renames the finished files of recorded outcomes of one download from its partial file to
    /// their hand-over path (call it holding the download's lock, before its partial file is
    /// used again). A file found at neither place turns the outcome into a failure.
    func completeStagings(for identifier: String) throws {
        let rows = try container.db.read {
            try $0.query(
                "SELECT seq, path, staged FROM url_events WHERE identifier = ? AND staged IS NOT NULL",
                [.text(identifier)])
        }
        for row in rows {
            guard let seq = row["seq"]?.int, let path = row["path"]?.string, let staged = row["staged"]?.string else {
                continue
            }
            if !FileSystem.exists(path) {
                if FileSystem.exists(staged) {
                    try SystemCall.retrying("rename", path: path) { rename(staged, path) }
                } else {
                    try container.db.transaction { tx in
                        _ = try tx.run(
                            "UPDATE url_events SET kind = 'failed', path = NULL, message = ? WHERE seq = ?",
                            [.text("the downloaded file was lost before it was handed over"), .integer(seq)])
                    }
                }
            }
            try container.db.transaction { tx in
                _ = try tx.run("UPDATE url_events SET staged = NULL WHERE seq = ?", [.integer(seq)])
            }
        }
    }

    /// The outcome the handler is being given on this thread, if it has a record: ``postToApp(_:reservedForExtension:)``
    /// from the handler then posts that record instead of a new one.
    struct CurrentHandover: @unchecked Sendable {
        let seq: Int64
        let thread: pthread_t
    }

    /// Hands a recorded outcome to the handler, under the exclusive lock, once: an outcome another
    /// process delivered meanwhile is skipped. When the handler does not post it (to the app or
    /// the extension), it was delivered to this process; a file it did not move is deleted.
    /// - Parameter live: the event as this process saw it (the original error); without it, the
    ///   event is rebuilt from the record.
    func handOver(_ seq: Int64, live: Event? = nil) {
        _ = try? withExclusiveControl {
            guard
                let row = try container.db.read({
                    try $0.query(
                        "SELECT * FROM url_events WHERE seq = ? AND delivered = ? AND staged IS NULL",
                        [.integer(seq), .integer(OutcomeState.recorded)])
                }).first,
                let id = row["identifier"]?.string, let url = row["url"]?.string.flatMap(URL.init(string:))
            else { return }
            TestStopPoint.reach("handover.underLock")
            let event: Event
            if let d = try? Self.storedDownload(
                row, identifier: id, url: url, table: "url_events", container: container)
            {
                if row["kind"]?.string == "finished", let path = row["path"]?.string {
                    event = .finished(d, URL(fileURLWithPath: path))
                } else if let live, case .failed = live {
                    event = live
                } else {
                    event = .failed(
                        d,
                        DeliveredError(
                            code: row["code"]?.int.flatMap { Int(exactly: $0) },
                            message: row["message"]?.string ?? "the download failed"))
                }
                handover.withLock { $0 = CurrentHandover(seq: seq, thread: pthread_self()) }
                handler(event, self)
                handover.withLock { $0 = nil }
            }
            let closed = try container.db.transaction { tx in
                try tx.run(
                    "UPDATE url_events SET delivered = ? WHERE seq = ? AND delivered = ?",
                    [.integer(OutcomeState.done), .integer(seq), .integer(OutcomeState.recorded)])
            }
            // not moved by the handler: deleted, as on Apple's platforms
            if closed == 1, let path = row["path"]?.string { unlink(path) }
        }
    }

    /// Hands over the outcomes this role recorded and no process handed over: the process that
    /// recorded them stopped or crashed first (the agent calls it when it starts; an app's manager
    /// when it is created). Each is delivered once.
    public func deliverRecordedOutcomes() throws {
        let rows = try container.db.read {
            try $0.query(
                "SELECT seq, identifier, staged FROM url_events WHERE delivered = ? AND owner = ? ORDER BY seq",
                [.integer(OutcomeState.recorded), .text(roleName)])
        }
        for row in rows {
            guard let seq = row["seq"]?.int, let id = row["identifier"]?.string else { continue }
            if row["staged"]?.string != nil {
                // Its partial file is renamed under the download's lock; a process holding it does that itself.
                guard let lock = lockDownload(id) else { continue }
                defer { lock.release() }
                try completeStagings(for: id)
            }
            handOver(seq)
        }
    }

    /// Takes a reserved outcome for the extension's process (``ExtensionCall/finished(_:filePath:outcome:)``),
    /// before its handler runs: false when it is no longer reserved (a restarted agent released it
    /// to the app), and the extension must not receive it.
    public static func claimReservation(_ seq: Int64, containerPath: String) throws -> Bool {
        let container = try ClientContainer(path: containerPath)
        return try ExclusiveControl.of(container: container.path).run {
            try container.db.transaction { tx in
                try tx.run(
                    "UPDATE url_events SET delivered = ? WHERE seq = ? AND delivered = ?",
                    [.integer(OutcomeState.takenByExtension), .integer(seq), .integer(OutcomeState.reserved)])
            }
        } == 1
    }

    /// Starts receiving, through this manager's handler, the outcomes of downloads the agent ran.
    public func startListening(pollInterval: TimeInterval = 0.1) throws {
        try withExclusiveControl {
            try listening.withLock { state in
                guard state == nil else { return }
                guard let lock = try container.layout.acquire(.appListening, waiting: true) else { return }
                let timer = RepeatingTimer(label: "backlot.url-events", every: pollInterval, after: 0) { [weak self] in
                    self?.claimPostedEvents()
                }
                state = ListeningState(lock: lock, timer: timer)
            }
        }
    }

    /// Stops receiving them; later events go to the extension.
    public func stopListening() throws {
        try withExclusiveControl {
            listening.withLock { state in
                guard let s = state else { return }
                s.timer.cancel()
                s.lock.release()
                state = nil
            }
        }
    }

    /// Whether an app process listens now (call it under ``withExclusiveControl(_:)``).
    public var appIsListening: Bool { container.layout.isHeld(.appListening) }

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
        let state = reservedForExtension ? OutcomeState.reserved : OutcomeState.forApp
        // From the handler, for an outcome already recorded: that record is posted, in place.
        if let current = handover.withLock({ $0 }), pthread_equal(current.thread, pthread_self()) != 0 {
            let posted = try container.db.transaction { tx in
                try tx.run(
                    "UPDATE url_events SET delivered = ? WHERE seq = ? AND delivered = ?",
                    [.integer(state), .integer(current.seq), .integer(OutcomeState.recorded)])
            }
            if posted == 1 { return current.seq }
        }
        let d: URLDownload
        let kind: String
        var path: String? = nil
        var message: String? = nil
        var code: Int? = nil
        switch event {
        case .finished(let download, let url):
            d = download
            kind = "finished"
            path = try setAside(url).path
        case .failed(let download, let error):
            d = download
            kind = "failed"
            message = "\(error)"
            code = (error as? BackgroundDownloadError)?.code ?? (error as? DeliveredError)?.code
        default:
            return 0
        }
        return try container.db.transaction { tx in
            try Self.insertOutcome(
                &tx, d, kind: kind, path: path, staged: nil, message: message, code: code, state: state, owner: roleName
            )
        }
    }

    /// The file of a posted outcome, if it has one.
    public func postedFile(_ seq: Int64) -> URL? {
        guard
            let row = try? container.db.read({
                try $0.query("SELECT path FROM url_events WHERE seq = ?", [.integer(seq)])
            }).first,
            let path = row["path"]?.string
        else { return nil }
        return URL(fileURLWithPath: path)
    }

    /// Ends a reservation: delivered to the extension (the outcome is done; a file it did not move
    /// is deleted), or not (the app takes it the next time it listens).
    ///
    /// An outcome the extension's process claimed (``claimReservation(_:containerPath:)``) before
    /// its handler ran was delivered to it whatever became of the call afterwards, except a
    /// finished file still in place (the extension crashed before it moved it): that goes to the
    /// app, so that no file is lost. A file is in one place only, so it is never delivered twice.
    public func completeReservation(_ seq: Int64, deliveredToExtension: Bool) throws {
        try withExclusiveControl {
            if deliveredToExtension {
                let done = try container.db.transaction { tx in
                    try tx.run(
                        "UPDATE url_events SET delivered = ? WHERE seq = ? AND delivered IN (?, ?)",
                        [
                            .integer(OutcomeState.done), .integer(seq), .integer(OutcomeState.reserved),
                            .integer(OutcomeState.takenByExtension),
                        ]) == 1
                }
                if done, let file = postedFile(seq) { unlink(file.path) }
            } else {
                try settleUnfinished(where: "seq = ?", [.integer(seq)])
            }
        }
    }

    /// Reservations a stopped or crashed agent did not finish: those the extension's process did
    /// not claim go to the app; those it claimed were delivered to it (but a file it did not move
    /// goes to the app).
    public func releaseUnfinishedReservations() throws {
        try withExclusiveControl { try settleUnfinished(where: "1", []) }
    }

    /// The reservations the extension could not finish (call under the exclusive lock).
    private func settleUnfinished(where condition: String, _ bindings: [Database.Value]) throws {
        let taken = try container.db.transaction { tx -> [Database.Row] in
            _ = try tx.run(
                "UPDATE url_events SET delivered = ? WHERE delivered = ? AND \(condition)",
                [.integer(OutcomeState.forApp), .integer(OutcomeState.reserved)] + bindings)
            return try tx.query(
                "SELECT seq, kind, path FROM url_events WHERE delivered = ? AND \(condition)",
                [.integer(OutcomeState.takenByExtension)] + bindings)
        }
        for row in taken {
            guard let seq = row["seq"]?.int else { continue }
            let fileLeft = row["kind"]?.string == "finished" && row["path"]?.string.map(FileSystem.exists) == true
            try container.db.transaction { tx in
                _ = try tx.run(
                    "UPDATE url_events SET delivered = ? WHERE seq = ? AND delivered = ?",
                    [
                        .integer(fileLeft ? OutcomeState.forApp : OutcomeState.done), .integer(seq),
                        .integer(OutcomeState.takenByExtension),
                    ])
            }
        }
    }

    /// Moves a finished file out of the download manager's way (it deletes what its handler left),
    /// for a handler that hands it to another process after returning.
    public func setAside(_ url: URL) throws -> URL {
        let dir = container.layout.handoverFolder
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let target = dir + "/" + UUID().uuidString.lowercased() + ".file"
        try SystemCall.retrying("rename", path: target) { rename(url.path, target) }
        return URL(fileURLWithPath: target)
    }

    /// Delivers every posted event not yet delivered, each exactly once.
    func claimPostedEvents() {
        _ = try? withExclusiveControl {
            // Stopped listening while this round waited for the lock (or in a handler): the events stay for the next time.
            while listening.withLock({ $0 != nil }),
                let row = try container.db.transaction({ tx -> Database.Row? in
                    guard
                        let r = try tx.query("SELECT * FROM url_events WHERE delivered = 0 ORDER BY seq LIMIT 1").first,
                        let seq = r["seq"]?.int
                    else { return nil }
                    guard
                        try tx.run(
                            "UPDATE url_events SET delivered = 1 WHERE seq = ? AND delivered = 0", [.integer(seq)]) == 1
                    else { return nil }
                    return r
                })
            {
                guard let id = row["identifier"]?.string, let url = row["url"]?.string.flatMap(URL.init(string:)) else {
                    continue
                }
                // A row with a number out of range (written by another process) is skipped, never a trap.
                guard
                    let d = try? Self.storedDownload(
                        row, identifier: id, url: url, table: "url_events", container: container)
                else { continue }
                if row["kind"]?.string == "finished", let path = row["path"]?.string {
                    // The extension took it before a crash left its reservation open: it is not delivered twice.
                    guard FileSystem.exists(path) else { continue }
                    handler(.finished(d, URL(fileURLWithPath: path)), self)
                    unlink(path)  // not moved by the handler: deleted, as on Apple's platforms
                } else {
                    handler(
                        .failed(
                            d,
                            DeliveredError(
                                code: row["code"]?.int.flatMap { Int(exactly: $0) },
                                message: row["message"]?.string ?? "the download failed")), self)
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
    let lock: FileLock
    let timer: RepeatingTimer
    init(lock: FileLock, timer: RepeatingTimer) {
        self.lock = lock
        self.timer = timer
    }
}
