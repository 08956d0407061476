import BacklotBasics
import BacklotContainer
import BacklotStore
import Foundation

/// Pending requests and the history of runs, in SQLite, shared by the app and the agent.
struct TaskStore: Sendable {
    let db: Database

    init(path: String) throws {
        db = try ContainerSchema.tasks.open(path)
    }

    /// Stores a request, replacing one with the same identifier; refuses one over its kind's limit.
    func submit(_ r: TaskRequest, now: Date) throws {
        let p = r as? ProcessingTaskRequest
        try db.transaction { tx in
            let others =
                try tx.query(
                    "SELECT COUNT(*) AS n FROM task_requests WHERE kind = ? AND identifier != ?",
                    [.text(r.kind.rawValue), .text(r.identifier)]
                ).first?["n"]?.int ?? 0
            guard others < r.kind.pendingLimit else {
                throw TaskScheduler.Error(
                    .tooManyPendingTaskRequests,
                    "\(r.kind.pendingLimit) \(r.kind.rawValue) request\(r.kind.pendingLimit == 1 ? " is" : "s are") already pending; cancel one or resubmit its identifier to replace it",
                    identifier: r.identifier)
            }
            try tx.run(
                """
                INSERT INTO task_requests(identifier, kind, earliest, requires_network, requires_power, submitted) VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT(identifier) DO UPDATE SET kind = excluded.kind, earliest = excluded.earliest, requires_network = excluded.requires_network,
                requires_power = excluded.requires_power, submitted = excluded.submitted
                """,
                [
                    .text(r.identifier), .text(r.kind.rawValue),
                    r.earliestBeginDate.map { .real($0.timeIntervalSince1970) } ?? .null,
                    .integer(p?.requiresNetworkConnectivity == true ? 1 : 0),
                    .integer(p?.requiresExternalPower == true ? 1 : 0),
                    .real(now.timeIntervalSince1970),
                ])
        }
    }

    func pending() throws -> [TaskRequest] {
        try db.read { try $0.query("SELECT * FROM task_requests ORDER BY submitted, identifier") }.map(Self.request)
    }

    func pending(_ identifier: String) throws -> TaskRequest? {
        try db.read { try $0.query("SELECT * FROM task_requests WHERE identifier = ?", [.text(identifier)]) }.first.map(
            Self.request)
    }

    static func request(_ row: Database.Row) -> TaskRequest {
        let id = row["identifier"]?.string ?? ""
        let r: TaskRequest
        if row["kind"]?.string == TaskKind.processing.rawValue {
            let p = ProcessingTaskRequest(identifier: id)
            p.requiresNetworkConnectivity = row["requires_network"]?.int == 1
            p.requiresExternalPower = row["requires_power"]?.int == 1
            r = p
        } else {
            r = AppRefreshTaskRequest(identifier: id)
        }
        if case .real(let t)? = row["earliest"] { r.earliestBeginDate = Date(timeIntervalSince1970: t) }
        return r
    }

    /// Takes a pending request, so that exactly one process runs it (only one submitted before
    /// `submittedBefore`, when given).
    func claim(_ identifier: String, submittedBefore: Date? = nil) throws -> TaskRequest? {
        try db.transaction { tx in
            guard let row = try tx.query("SELECT * FROM task_requests WHERE identifier = ?", [.text(identifier)]).first
            else { return nil }
            if let limit = submittedBefore, case .real(let t)? = row["submitted"], t >= limit.timeIntervalSince1970 {
                return nil
            }
            guard try tx.run("DELETE FROM task_requests WHERE identifier = ?", [.text(identifier)]) == 1 else {
                return nil
            }
            return Self.request(row)
        }
    }

    func cancel(_ identifier: String) throws {
        try db.transaction { tx in _ = try tx.run("DELETE FROM task_requests WHERE identifier = ?", [.text(identifier)])
        }
    }

    func cancelAll() throws {
        try db.transaction { tx in _ = try tx.run("DELETE FROM task_requests") }
    }

    /// Records a run, keeping the last 100 of each identifier.
    func record(_ run: TaskRun) throws {
        try db.transaction { tx in
            _ = try tx.run(
                "INSERT INTO task_runs(identifier, kind, started, ended, outcome, ended_uptime, boot) VALUES (?, ?, ?, ?, ?, ?, ?)",
                [
                    .text(run.identifier), .text(run.kind.rawValue), .real(run.started.timeIntervalSince1970),
                    .real(run.ended.timeIntervalSince1970), .text(run.outcome.rawValue),
                    run.endedReading.map { .real($0.uptime) } ?? .null,
                    run.endedReading.map { .text($0.bootID) } ?? .null,
                ])
            _ = try tx.run(
                """
                DELETE FROM task_runs WHERE identifier = ? AND seq NOT IN (SELECT seq FROM task_runs WHERE identifier = ? ORDER BY seq DESC LIMIT 100)
                """, [.text(run.identifier), .text(run.identifier)])
        }
    }

    /// Runs, oldest first: of one identifier or all, the last `last` of them.
    func runs(_ identifier: String?, last: Int = 1000) throws -> [TaskRun] {
        let rows = try db.read { tx in
            identifier == nil
                ? try tx.query(
                    "SELECT * FROM (SELECT * FROM task_runs ORDER BY seq DESC LIMIT ?) ORDER BY seq",
                    [.integer(Int64(last))])
                : try tx.query(
                    "SELECT * FROM (SELECT * FROM task_runs WHERE identifier = ? ORDER BY seq DESC LIMIT ?) ORDER BY seq",
                    [.text(identifier!), .integer(Int64(last))])
        }
        return rows.map { r in
            func date(_ k: String) -> Date {
                if case .real(let t)? = r[k] { Date(timeIntervalSince1970: t) } else { Date(timeIntervalSince1970: 0) }
            }
            var reading: ClockReading?
            if case .real(let uptime)? = r["ended_uptime"], uptime.isFinite, let boot = r["boot"]?.string {
                reading = ClockReading(wall: date("ended"), uptime: uptime, bootID: boot)
            }
            return TaskRun(
                identifier: r["identifier"]?.string ?? "",
                kind: TaskKind(rawValue: r["kind"]?.string ?? "") ?? .refresh,
                started: date("started"), ended: date("ended"),
                outcome: TaskOutcome(rawValue: r["outcome"]?.string ?? "") ?? .failure,
                endedReading: reading)
        }
    }

    /// Records a launch in the container's one launch record (``AppLaunchRecord``), keeping 60
    /// days of them and the first one for good.
    func recordLaunch(at date: Date) throws {
        try AppLaunchRecord.record(in: db, at: date)
    }

    func launches(since date: Date) throws -> [Date] {
        try db.read {
            try $0.query("SELECT at FROM app_launches WHERE at >= ? ORDER BY at", [.real(date.timeIntervalSince1970)])
        }.compactMap { r in
            if case .real(let t)? = r["at"] { Date(timeIntervalSince1970: t) } else { nil }
        }
    }
}

/// One finished run of a task, as the scheduler's history keeps it.
public struct TaskRun: Sendable, Hashable {
    public let identifier: String
    public let kind: TaskKind
    public let started: Date
    public let ended: Date
    public let outcome: TaskOutcome
    /// The end on both clocks (nil for runs recorded before this was kept): the back-off is
    /// measured from it on the monotonic clock.
    public let endedReading: ClockReading?

    public init(
        identifier: String, kind: TaskKind, started: Date, ended: Date, outcome: TaskOutcome,
        endedReading: ClockReading? = nil
    ) {
        self.identifier = identifier
        self.kind = kind
        self.started = started
        self.ended = ended
        self.outcome = outcome
        self.endedReading = endedReading
    }
}
