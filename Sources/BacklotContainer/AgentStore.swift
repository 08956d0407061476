import BacklotBasics
import BacklotStore
import Foundation

/// The agent's state in `CONTAINER/agent.sqlite`: the queue of events (`backlot notify` and
/// `simulate` add to it; the agent takes from it), the extension's runtime per day, and a few
/// values (the configuration last used, the last periodic check), and the children it started.
/// The agent reads an event's request as the extension protocol's `ContentRequest` (BacklotAgent's
/// `AgentStore+ContentRequest`); here it is its name, one of ``requestNames``.
///
/// ```swift
/// let store = try AgentStore(containerPath: container)
/// let seq = try store.enqueue(requestNamed: "install", bypassBudget: false)
/// ```
public struct AgentStore: Sendable {
    let db: Database

    /// One queued or finished event.
    public struct Event: Sendable, Hashable {
        public let seq: Int64
        /// The content request's name (one of ``AgentStore/requestNames``).
        public let requestName: String
        /// `simulate`: the extension's daily budget does not apply.
        public let bypassBudget: Bool
        public let state: String
        public let extensionDone: Bool
        public let detail: String
        /// The essential phase is over: the essential packs are installed and the essential URL
        /// downloads the extension returned have ended (what `notify --wait` waits for).
        public var essentialDone: Bool = false
        /// For a queued event that was tried: the error code of its last attempt (`tls`, `io`,
        /// or `waiting` for a deferral), with ``detail`` saying what it met; nil when not tried yet.
        public var lastProblem: String? = nil
    }

    /// The container folder (the running agent's wake-up channel is in it).
    public let containerPath: String

    public init(containerPath: String) throws {
        self.containerPath = containerPath
        try FileSystem.makeDirectories(containerPath)
        db = try ContainerSchema.agent.open(ContainerLayout(root: containerPath).agentDatabase)
    }

    /// The names of the content requests an event may carry: those of the extension protocol's
    /// `ContentRequest` (a test keeps the two equal). A stored row with another name is skipped.
    public static let requestNames: Set<String> = ["install", "update", "periodic", "languageChange"]

    /// Queues an event; returns its number.
    /// - Throws: ``BacklotError/Code/invalidInput`` for a name not in ``requestNames``.
    @discardableResult
    public func enqueue(requestNamed name: String, bypassBudget: Bool) throws -> Int64 {
        guard Self.requestNames.contains(name) else {
            throw BacklotError(.invalidInput, "no such content request: \(name)", context: containerPath)
        }
        let seq = try db.transaction { tx in
            _ = try tx.run(
                "INSERT INTO agent_events(request, bypass, created) VALUES (?, ?, ?)",
                [.text(name), .integer(bypassBudget ? 1 : 0), .real(Date().timeIntervalSince1970)])
            return tx.lastInsertRowID
        }
        WakeChannel.poke(path: ContainerLayout(root: containerPath).agentWakeChannel)  // a running agent runs it now
        return seq
    }

    /// When the first queued event held for later (the extension's budget) may run, if any.
    public func nextHeldEvent() throws -> Date? {
        let row = try db.read {
            try $0.query(
                "SELECT MIN(not_before) AS due FROM agent_events WHERE state = 'queued' AND not_before IS NOT NULL")
        }.first
        guard case .real(let due)? = row?["due"], due.isFinite else { return nil }
        return Date(timeIntervalSince1970: due)
    }

    public func queued() throws -> [Event] {
        try db.read { try $0.query("SELECT * FROM agent_events WHERE state = 'queued' ORDER BY seq") }.compactMap(
            Self.event)
    }

    /// The queued events that may run at `now` (not held until the extension's budget renews).
    public func queued(dueAt now: Date) throws -> [Event] {
        try db.read {
            try $0.query(
                "SELECT * FROM agent_events WHERE state = 'queued' AND (not_before IS NULL OR not_before <= ?) ORDER BY seq",
                [.real(now.timeIntervalSince1970)])
        }.compactMap(Self.event)
    }

    /// Holds an event until the next UTC day, when the extension's budget renews.
    public func holdUntilTomorrow(_ seq: Int64, now: Date) throws {
        try hold(seq, until: Date(timeIntervalSince1970: (floor(now.timeIntervalSince1970 / 86_400) + 1) * 86_400))
    }

    /// Keeps a queued event from running before `date` (a server's `Retry-After`, a budget's renewal).
    public func hold(_ seq: Int64, until date: Date) throws {
        try db.transaction { tx in
            _ = try tx.run(
                "UPDATE agent_events SET not_before = ? WHERE seq = ?",
                [.real(date.timeIntervalSince1970), .integer(seq)])
        }
    }

    /// The last `limit` events, newest first, whatever their state.
    public func recent(_ limit: Int) throws -> [Event] {
        try db.read { try $0.query("SELECT * FROM agent_events ORDER BY seq DESC LIMIT ?", [.integer(Int64(limit))]) }
            .compactMap(Self.event)
    }

    public func event(_ seq: Int64) throws -> Event? {
        try db.read { try $0.query("SELECT * FROM agent_events WHERE seq = ?", [.integer(seq)]) }.first.flatMap(
            Self.event)
    }

    static func event(_ r: Database.Row) -> Event? {
        guard let seq = r["seq"]?.int, let name = r["request"]?.string, requestNames.contains(name) else {
            return nil
        }
        return Event(
            seq: seq, requestName: name, bypassBudget: r["bypass"]?.int == 1, state: r["state"]?.string ?? "queued",
            extensionDone: r["extension_done"]?.int == 1, detail: r["detail"]?.string ?? "",
            essentialDone: r["essential_done"]?.int == 1,
            lastProblem: r["last_problem"]?.string)
    }

    /// Records why a queued event's last attempt did not finish (it stays queued).
    public func noteProblem(_ seq: Int64, code: String, detail: String) throws {
        try db.transaction { tx in
            _ = try tx.run(
                "UPDATE agent_events SET last_problem = ?, detail = ? WHERE seq = ? AND state = 'queued'",
                [.text(code), .text(detail), .integer(seq)])
        }
    }

    public func markEssentialDone(_ seq: Int64) throws {
        try db.transaction { tx in
            _ = try tx.run("UPDATE agent_events SET essential_done = 1 WHERE seq = ?", [.integer(seq)])
        }
    }

    /// The essential URL downloads the extension returned for an event (the essential phase waits for them).
    public func essentialDownloads(_ seq: Int64) throws -> [String] {
        guard
            let text = try db.read({
                try $0.query("SELECT essential_downloads FROM agent_events WHERE seq = ?", [.integer(seq)])
            }).first?["essential_downloads"]?.string
        else { return [] }
        return text.isEmpty ? [] : text.split(separator: "\n").map(String.init)
    }

    public func setEssentialDownloads(_ seq: Int64, _ ids: [String]) throws {
        try db.transaction { tx in
            _ = try tx.run(
                "UPDATE agent_events SET essential_downloads = ? WHERE seq = ?",
                [.text(ids.joined(separator: "\n")), .integer(seq)])
        }
    }

    /// Ends an event (`done` or `failed`); a done event's essential phase is over too, recorded in
    /// the same transaction (``markEssentialDone(_:)`` is for an event with work after it).
    public func finish(_ seq: Int64, state: String, detail: String) throws {
        try db.transaction { tx in
            _ = try tx.run(
                "UPDATE agent_events SET state = ?, detail = ?, essential_done = MAX(essential_done, ?) WHERE seq = ?",
                [.text(state), .text(detail), .integer(state == "done" ? 1 : 0), .integer(seq)])
        }
    }

    public func markExtensionDone(_ seq: Int64) throws {
        try db.transaction { tx in
            _ = try tx.run("UPDATE agent_events SET extension_done = 1 WHERE seq = ?", [.integer(seq)])
        }
    }

    /// The packs the extension's `shouldDownload` kept for an event, once it was asked.
    public func accepted(_ seq: Int64) throws -> [String]? {
        guard
            let text = try db.read({ try $0.query("SELECT accepted FROM agent_events WHERE seq = ?", [.integer(seq)]) })
                .first?["accepted"]?.string
        else { return nil }
        return text.isEmpty ? [] : text.split(separator: "\n").map(String.init)
    }

    public func setAccepted(_ seq: Int64, _ ids: [String]) throws {
        try db.transaction { tx in
            _ = try tx.run(
                "UPDATE agent_events SET accepted = ? WHERE seq = ?",
                [.text(ids.joined(separator: "\n")), .integer(seq)])
        }
    }

    /// Keeps the last 200 finished events and 60 days of runtime.
    public func prune() {
        _ = try? db.transaction { tx in
            _ = try tx.run(
                "DELETE FROM agent_events WHERE state != 'queued' AND seq <= (SELECT MAX(seq) FROM agent_events) - 200")
            _ = try tx.run(
                "DELETE FROM extension_runtime WHERE day < ?",
                [.text(Self.day(Date().addingTimeInterval(-60 * 86_400)))])
        }
    }

    public static func day(_ date: Date) -> String {
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "UTC")
        f.dateFormat = "yyyy-MM-dd"
        return f.string(from: date)
    }

    /// Seconds the extension ran on the day of `date` (UTC).
    public func extensionRuntime(on date: Date) throws -> TimeInterval {
        let rows = try db.read {
            try $0.query("SELECT seconds FROM extension_runtime WHERE day = ?", [.text(Self.day(date))])
        }
        if case .real(let s)? = rows.first?["seconds"] { return s }
        return 0
    }

    public func addExtensionRuntime(_ seconds: TimeInterval, on date: Date) throws {
        try db.transaction { tx in
            _ = try tx.run(
                "INSERT INTO extension_runtime(day, seconds) VALUES (?, ?) ON CONFLICT(day) DO UPDATE SET seconds = seconds + excluded.seconds",
                [.text(Self.day(date)), .real(seconds)])
        }
    }

    // MARK: Children (the extension's calls, background launches)

    /// A process group the agent started and has not seen end: recorded before the child runs,
    /// removed when it has been reaped, so that the next agent ends what a crashed one left.
    public struct Child: Sendable, Hashable {
        /// The process group (the child's pid).
        public let pgid: Int32
        /// The value of `BACKLOT_AGENT_CHILD` in the child's environment (and its descendants'),
        /// so that a process group ID reused by an unrelated program is never signalled.
        public let token: String
        /// `extension:CALL` or `app:TASK-ID`.
        public let what: String
        /// The event an extension call was made for.
        public let event: Int64?
        /// When it started (wall clock, for the record only).
        public let started: Date

        public init(pgid: Int32, token: String, what: String, event: Int64?, started: Date) {
            self.pgid = pgid
            self.token = token
            self.what = what
            self.event = event
            self.started = started
        }
    }

    public func recordChild(_ c: Child) throws {
        try db.transaction { tx in
            _ = try tx.run(
                "INSERT OR REPLACE INTO agent_children(pgid, token, what, event, started) VALUES (?, ?, ?, ?, ?)",
                [
                    .integer(Int64(c.pgid)), .text(c.token), .text(c.what), c.event.map { .integer($0) } ?? .null,
                    .real(c.started.timeIntervalSince1970),
                ])
        }
    }

    public func removeChild(_ pgid: Int32) throws {
        try db.transaction { tx in _ = try tx.run("DELETE FROM agent_children WHERE pgid = ?", [.integer(Int64(pgid))])
        }
    }

    /// The children recorded and not known to have ended.
    public func children() throws -> [Child] {
        try db.read { try $0.query("SELECT * FROM agent_children ORDER BY started") }.compactMap { r in
            guard let pgid = r["pgid"]?.int, let token = r["token"]?.string, let what = r["what"]?.string else {
                return nil
            }
            var started = Date(timeIntervalSince1970: 0)
            if case .real(let t)? = r["started"] { started = Date(timeIntervalSince1970: t) }
            return Child(
                pgid: Int32(truncatingIfNeeded: pgid), token: token, what: what, event: r["event"]?.int,
                started: started)
        }
    }

    public func value(_ key: String) throws -> String? {
        try db.read { try $0.query("SELECT value FROM agent_meta WHERE key = ?", [.text(key)]) }.first?["value"]?.string
    }

    public func setValue(_ key: String, _ value: String) throws {
        try db.transaction { tx in
            _ = try tx.run(
                "INSERT INTO agent_meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                [.text(key), .text(value)])
        }
    }
}
