import BacklotBasics
import BacklotContainer
import BacklotCrypto
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

    var roleName: String { role == .agent ? "agent" : "app" }

    /// Inserts an outcome record (in the caller's transaction, the one that retires the download).
    static func insertOutcome(
        _ tx: StateTransaction, _ d: URLDownload, kind: String, path: String?, staged: String?,
        message: String?, code: Int?, state: URLOutcomeState, owner: String
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
        return try tx.recordURLOutcome(
            URLDownloadRecord(
                identifier: d.identifier, url: d.url.absoluteString, fileSize: fileSize, essential: d.isEssential,
                priority: priority),
            kind: kind, path: path, staged: staged, message: message, code: storedCode, state: state, owner: owner)
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
        within: ((StateTransaction) throws -> Void)? = nil
    ) throws -> Int64? {
        let path: String?
        if staged != nil {
            _ = try container.layout.openDownloadFolders()  // made, and checked to be folders
            path = container.layout.handoverFolder + "/" + UUID().uuidString.lowercased() + ".file"
        } else {
            path = nil
        }
        return try container.store.transaction { tx -> Int64? in
            guard try tx.unscheduleURLDownload(d.identifier) else { return nil }
            try within?(tx)  // a throw rolls the whole transaction back, the unscheduling included
            try tx.clearPauses(d.identifier)
            return try Self.insertOutcome(
                tx, d, kind: kind, path: path, staged: staged, message: message, code: code, state: .recorded,
                owner: roleName)
        }
    }

    /// Renames the finished files of recorded outcomes of one download from its partial file to
    /// their hand-over path (call it holding the download's lock, before its partial file is
    /// used again). A file found at neither place turns the outcome into a failure.
    func completeStagings(for identifier: String) throws {
        for outcome in try container.store.read({ try $0.stagedURLOutcomes(of: identifier) }) {
            // Rows another process wrote: a file is moved only from this container's downloads to
            // its hand-over folder, never from or to a path a damaged or crafted row names.
            // Both are found by name, relative to the folders opened (a link swapped in for either
            // is refused, never followed).
            guard let name = outcome.path.flatMap(ContainerLayout.recordedName),
                let staged = outcome.staged.flatMap(ContainerLayout.recordedName)
            else { continue }
            let folders = try container.layout.openDownloadFolders()
            if !folders.handover.contains(name) {
                if folders.downloads.contains(staged) {
                    try folders.downloads.move(staged, to: folders.handover, as: name)
                } else {
                    try container.store.transaction { tx in
                        try tx.markURLOutcomeFailed(
                            outcome.seq, message: "the downloaded file was lost before it was handed over")
                    }
                }
            }
            try container.store.transaction { tx in try tx.clearStaging(outcome.seq) }
        }
    }

    /// The outcome the handler is being given on this thread, if it has a record: ``postToApp(_:reservedForExtension:)``
    /// from the handler then posts that record instead of a new one.
    struct CurrentHandover: Sendable {
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
            guard let row = try container.store.read({ try $0.urlOutcome(seq) }), row.state == .recorded,
                row.staged == nil
            else { return }
            TestStopPoint.reach("handover.underLock")
            let event: Event
            if let d = try? Self.storedDownload(row.download, table: "url_events", container: container) {
                if row.kind == "finished", let path = row.path.flatMap(container.layout.handoverFile(recorded:)) {
                    event = .finished(d, URL(fileURLWithPath: path))
                } else if let live, case .failed = live {
                    event = live
                } else {
                    event = .failed(d, Self.deliveredError(row))
                }
                handover.withLock { $0 = CurrentHandover(seq: seq, thread: pthread_self()) }
                handler(event, self)
                handover.withLock { $0 = nil }
            }
            let closed = try container.store.transaction { tx in
                try tx.moveURLOutcome(seq, to: .done, from: [.recorded])
            }
            // not moved by the handler: deleted, as on Apple's platforms (only a hand-over file)
            if closed, let path = row.path { removeHandoverFile(recorded: path) }
        }
    }

    /// Hands over the outcomes this role recorded and no process handed over: the process that
    /// recorded them stopped or crashed first (the agent calls it when it starts; an app's manager
    /// when it is created). Each is delivered once.
    public func deliverRecordedOutcomes() throws {
        for row in try container.store.read({ try $0.urlOutcomes(in: .recorded, recordedBy: roleName) }) {
            if row.staged != nil {
                // Its partial file is renamed under the download's lock; a process holding it does that itself.
                guard let lock = lockDownload(row.download.identifier) else { continue }
                defer { lock.release() }
                // A row whose file cannot be moved now (its folder is a link the app made, say)
                // stays recorded for the next start; the others are delivered.
                guard (try? completeStagings(for: row.download.identifier)) != nil else { continue }
            }
            handOver(row.seq)
        }
    }

    /// Takes a reserved outcome for the extension's process (``ExtensionCall/finished(_:filePath:outcome:)``),
    /// before its handler runs: false when it is no longer reserved (a restarted agent released it
    /// to the app), and the extension must not receive it.
    public static func claimReservation(_ seq: Int64, containerPath: String) throws -> Bool {
        let container = try ClientContainer(path: containerPath)
        return try ExclusiveControl.of(container: container.path).run {
            try container.store.transaction { tx in try tx.moveURLOutcome(seq, to: .takenByExtension, from: [.reserved])
            }
        }
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

    /// Stops receiving them; later events go to the extension. Unless it is called under the
    /// exclusive control (from a handler, or inside ``withExclusiveControl(_:)``), it returns once
    /// the last round of polling has ended and released what it held.
    public func stopListening() throws {
        let stopped = try withExclusiveControl {
            listening.withLock { state -> ListeningState? in
                defer { state = nil }
                state?.timer.cancel()
                state?.lock.release()
                return state
            }
        }
        // The polling round takes the control: it can end only once this thread holds it no more.
        if let stopped, !ExclusiveControl.of(container: container.path).isHeldByCurrentThread {
            stopped.timer.cancelAndWait()
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
        let state: URLOutcomeState = reservedForExtension ? .reserved : .forApp
        // From the handler, for an outcome already recorded: that record is posted, in place.
        if let current = handover.withLock({ $0 }), pthread_equal(current.thread, pthread_self()) != 0 {
            let posted = try container.store.transaction { tx in
                try tx.moveURLOutcome(current.seq, to: state, from: [.recorded])
            }
            if posted { return current.seq }
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
        return try container.store.transaction { tx in
            try Self.insertOutcome(
                tx, d, kind: kind, path: path, staged: nil, message: message, code: code, state: state, owner: roleName)
        }
    }

    /// The file of a posted outcome, if it has one.
    public func postedFile(_ seq: Int64) -> URL? {
        guard let outcome = try? container.store.read({ try $0.urlOutcome(seq) }),
            let path = outcome.path.flatMap(container.layout.handoverFile(recorded:))
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
                let done = try container.store.transaction { tx in
                    try tx.moveURLOutcome(seq, to: .done, from: [.reserved, .takenByExtension])
                }
                if done, let file = postedFile(seq) { removeHandoverFile(recorded: file.path) }
            } else {
                try settleUnfinished(only: seq)
            }
        }
    }

    /// Reservations a stopped or crashed agent did not finish: those the extension's process did
    /// not claim go to the app; those it claimed were delivered to it (but a file it did not move
    /// goes to the app).
    public func releaseUnfinishedReservations() throws {
        try withExclusiveControl { try settleUnfinished(only: nil) }
    }

    /// The reservations the extension could not finish (call under the exclusive lock).
    /// - Parameter seq: only that outcome; nil: every one.
    private func settleUnfinished(only seq: Int64?) throws {
        let taken = try container.store.transaction { tx -> [URLOutcomeRecord] in
            try tx.moveURLOutcomes(from: .reserved, to: .forApp, only: seq)
            return try tx.urlOutcomes(in: .takenByExtension).filter { seq == nil || $0.seq == seq }
        }
        for row in taken {
            let fileLeft = row.kind == "finished" && row.path.map(handoverFileExists(recorded:)) == true
            try container.store.transaction { tx in
                try tx.moveURLOutcome(row.seq, to: fileLeft ? .forApp : .done, from: [.takenByExtension])
            }
        }
    }

    /// The error a recorded failure stands for.
    static func deliveredError(_ row: URLOutcomeRecord) -> DeliveredError {
        DeliveredError(
            code: row.code.flatMap { Int(exactly: $0) }, message: row.message ?? "the download failed")
    }

    /// Moves a finished file out of the download manager's way (it deletes what its handler left),
    /// for a handler that hands it to another process after returning.
    public func setAside(_ url: URL) throws -> URL {
        let name = UUID().uuidString.lowercased() + ".file"
        try container.layout.openDownloadFolders().handover.moveIn(from: url.path, as: name)
        return URL(fileURLWithPath: container.layout.handoverFolder + "/" + name)
    }

    /// Removes the hand-over file a recorded outcome names (a row another process wrote: only its
    /// last name counts), by name relative to the hand-over folder's descriptor.
    func removeHandoverFile(recorded path: String) {
        guard let name = ContainerLayout.recordedName(path), let folders = try? container.layout.openDownloadFolders()
        else { return }
        try? folders.handover.removeFile(Array(name.utf8))
    }

    /// Whether the hand-over file a recorded outcome names is there (a link counts, unfollowed).
    func handoverFileExists(recorded path: String) -> Bool {
        guard let name = ContainerLayout.recordedName(path), let folders = try? container.layout.openDownloadFolders()
        else { return false }
        return folders.handover.contains(name)
    }

    /// Delivers every posted event not yet delivered, each exactly once.
    func claimPostedEvents() {
        _ = try? withExclusiveControl {
            // Stopped listening while this round waited for the lock (or in a handler): the events stay for the next time.
            while listening.withLock({ $0 != nil }),
                let row = try container.store.transaction({ tx in
                    try tx.claimOldestURLOutcome(in: .forApp, movingTo: .done)
                })
            {
                // A row without a URL, or with a number out of range (written by another process), is skipped, never a trap.
                guard let d = try? Self.storedDownload(row.download, table: "url_events", container: container) else {
                    continue
                }
                if row.kind == "finished", let recorded = row.path {
                    // The extension took it before a crash left its reservation open: it is not
                    // delivered twice; nor is a path outside the hand-over folder (a crafted row).
                    guard let path = container.layout.handoverFile(recorded: recorded),
                        handoverFileExists(recorded: recorded)
                    else { continue }
                    handler(.finished(d, URL(fileURLWithPath: path)), self)
                    // not moved by the handler: deleted, as on Apple's platforms
                    removeHandoverFile(recorded: recorded)
                } else {
                    handler(.failed(d, Self.deliveredError(row)), self)
                }
            }
        }
    }

    /// Runs `body` (the downloader extension's `downloads(for:)`) while scheduling from any other
    /// process is refused with ``BackgroundDownloadError/schedulingBlockedDuringContentRequest(_:)``.
    public func blockingScheduling<T>(_ body: () throws -> T) throws -> T {
        try container.setMeta(.contentRequest, String(getpid()))
        defer { try? container.setMeta(.contentRequest, "") }
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
