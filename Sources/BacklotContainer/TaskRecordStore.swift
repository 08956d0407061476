import BacklotBasics
import BacklotStore
import Foundation

/// The task scheduler's tables of `tasks.sqlite`: pending requests (`task_requests`) and the
/// history of runs (`task_runs`), shared by the app and the agent; the app's launches in the same
/// database are ``AppLaunchRecord``'s. Times are seconds since 1970, kinds and outcomes their
/// names: the task scheduler converts them to its types.
///
/// ```swift
/// let store = try TaskRecordStore(layout: ContainerLayout(root: container))
/// let pending = try store.pending()
/// ```
public struct TaskRecordStore: Sendable {
    /// The database (``AppLaunchRecord`` writes the launches in it).
    public let database: Database

    /// A pending request.
    public struct Request: Sendable, Hashable {
        public let identifier: String
        public let kind: String
        public let earliest: Double?
        public let requiresNetwork: Bool
        public let requiresPower: Bool
        public let submitted: Double

        public init(
            identifier: String, kind: String, earliest: Double?, requiresNetwork: Bool, requiresPower: Bool,
            submitted: Double
        ) {
            self.identifier = identifier
            self.kind = kind
            self.earliest = earliest
            self.requiresNetwork = requiresNetwork
            self.requiresPower = requiresPower
            self.submitted = submitted
        }
    }

    /// A finished run.
    public struct Run: Sendable, Hashable {
        public let identifier: String
        public let kind: String
        public let started: Double
        public let ended: Double
        public let outcome: String
        /// The end on the monotonic clock, and the boot it was measured in (nil for older runs).
        public let endedUptime: Double?
        public let boot: String?

        public init(
            identifier: String, kind: String, started: Double, ended: Double, outcome: String, endedUptime: Double?,
            boot: String?
        ) {
            self.identifier = identifier
            self.kind = kind
            self.started = started
            self.ended = ended
            self.outcome = outcome
            self.endedUptime = endedUptime
            self.boot = boot
        }
    }

    /// Opens (creating and migrating when needed) `tasks.sqlite` at `path`.
    public init(path: String) throws {
        database = try ContainerSchema.tasks.open(path)
    }

    /// Opens the task database of `layout`.
    public init(layout: ContainerLayout) throws {
        try self.init(path: layout.tasksDatabase)
    }

    /// Stores a request, replacing one with the same identifier, unless `limit` requests of its
    /// kind with other identifiers are pending already (checked and stored in one transaction).
    /// - Returns: false when it was refused for the limit.
    public func submit(_ r: Request, limit: Int64) throws -> Bool {
        try database.transaction { tx in
            let others =
                try tx.query(
                    "SELECT COUNT(*) AS n FROM task_requests WHERE kind = ? AND identifier != ?",
                    [.text(r.kind), .text(r.identifier)]
                ).first?["n"]?.int ?? 0
            guard others < limit else { return false }
            try tx.run(
                """
                INSERT INTO task_requests(identifier, kind, earliest, requires_network, requires_power, submitted) VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT(identifier) DO UPDATE SET kind = excluded.kind, earliest = excluded.earliest, requires_network = excluded.requires_network,
                requires_power = excluded.requires_power, submitted = excluded.submitted
                """,
                [
                    .text(r.identifier), .text(r.kind), r.earliest.map { .real($0) } ?? .null,
                    .integer(r.requiresNetwork ? 1 : 0), .integer(r.requiresPower ? 1 : 0), .real(r.submitted),
                ])
            return true
        }
    }

    /// The pending requests, oldest first.
    public func pending() throws -> [Request] {
        try database.read { try $0.query("SELECT * FROM task_requests ORDER BY submitted, identifier") }.map(
            Self.request)
    }

    /// The pending request of `identifier`, if any.
    public func pending(_ identifier: String) throws -> Request? {
        try database.read { try $0.query("SELECT * FROM task_requests WHERE identifier = ?", [.text(identifier)]) }
            .first.map(Self.request)
    }

    /// Takes a pending request, so that exactly one process runs it (only one submitted before
    /// `submittedBefore`, when given).
    public func claim(_ identifier: String, submittedBefore: Double? = nil) throws -> Request? {
        try database.transaction { tx in
            guard let row = try tx.query("SELECT * FROM task_requests WHERE identifier = ?", [.text(identifier)]).first
            else { return nil }
            let r = Self.request(row)
            if let limit = submittedBefore, r.submitted >= limit { return nil }
            guard try tx.run("DELETE FROM task_requests WHERE identifier = ?", [.text(identifier)]) == 1 else {
                return nil
            }
            return r
        }
    }

    /// Cancels the pending request of `identifier`.
    public func cancel(_ identifier: String) throws {
        try database.transaction { tx in
            _ = try tx.run("DELETE FROM task_requests WHERE identifier = ?", [.text(identifier)])
        }
    }

    /// Cancels every pending request.
    public func cancelAll() throws {
        try database.transaction { tx in _ = try tx.run("DELETE FROM task_requests") }
    }

    /// Records a run, keeping the last `keep` of its identifier.
    public func record(_ run: Run, keep: Int64 = 100) throws {
        try database.transaction { tx in
            _ = try tx.run(
                "INSERT INTO task_runs(identifier, kind, started, ended, outcome, ended_uptime, boot) VALUES (?, ?, ?, ?, ?, ?, ?)",
                [
                    .text(run.identifier), .text(run.kind), .real(run.started), .real(run.ended), .text(run.outcome),
                    run.endedUptime.map { .real($0) } ?? .null, run.boot.map { .text($0) } ?? .null,
                ])
            _ = try tx.run(
                """
                DELETE FROM task_runs WHERE identifier = ? AND seq NOT IN (SELECT seq FROM task_runs WHERE identifier = ? ORDER BY seq DESC LIMIT ?)
                """, [.text(run.identifier), .text(run.identifier), .integer(keep)])
        }
    }

    /// Runs, oldest first: of one identifier or all, the last `last` of them.
    public func runs(_ identifier: String?, last: Int64) throws -> [Run] {
        let rows = try database.read { tx in
            if let identifier {
                try tx.query(
                    "SELECT * FROM (SELECT * FROM task_runs WHERE identifier = ? ORDER BY seq DESC LIMIT ?) ORDER BY seq",
                    [.text(identifier), .integer(last)])
            } else {
                try tx.query(
                    "SELECT * FROM (SELECT * FROM task_runs ORDER BY seq DESC LIMIT ?) ORDER BY seq", [.integer(last)])
            }
        }
        return rows.map { r in
            func real(_ k: String) -> Double? { if case .real(let t)? = r[k] { t } else { nil } }
            return Run(
                identifier: r["identifier"]?.string ?? "", kind: r["kind"]?.string ?? "", started: real("started") ?? 0,
                ended: real("ended") ?? 0, outcome: r["outcome"]?.string ?? "", endedUptime: real("ended_uptime"),
                boot: r["boot"]?.string)
        }
    }

    static func request(_ row: Database.Row) -> Request {
        var earliest: Double? = nil
        if case .real(let t)? = row["earliest"] { earliest = t }
        var submitted = 0.0
        if case .real(let t)? = row["submitted"] { submitted = t }
        return Request(
            identifier: row["identifier"]?.string ?? "", kind: row["kind"]?.string ?? "", earliest: earliest,
            requiresNetwork: row["requires_network"]?.int == 1, requiresPower: row["requires_power"]?.int == 1,
            submitted: submitted)
    }
}
