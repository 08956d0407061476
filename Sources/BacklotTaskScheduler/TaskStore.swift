import BacklotBasics
import BacklotContainer
import Foundation

/// Pending requests and the history of runs, shared by the app and the agent: the scheduler's
/// types over the container's ``TaskRecordStore``.
struct TaskStore: Sendable {
    let records: TaskRecordStore

    init(path: String) throws {
        records = try TaskRecordStore(path: path)
    }

    /// Stores a request, replacing one with the same identifier; refuses one over its kind's limit.
    func submit(_ r: TaskRequest, now: Date) throws {
        let p = r as? ProcessingTaskRequest
        let stored = try records.submit(
            TaskRecordStore.Request(
                identifier: r.identifier, kind: r.kind.rawValue, earliest: r.earliestBeginDate?.timeIntervalSince1970,
                requiresNetwork: p?.requiresNetworkConnectivity == true,
                requiresPower: p?.requiresExternalPower == true,
                submitted: now.timeIntervalSince1970),
            limit: Int64(r.kind.pendingLimit))
        guard stored else {
            throw TaskScheduler.Error(
                .tooManyPendingTaskRequests,
                "\(r.kind.pendingLimit) \(r.kind.rawValue) request\(r.kind.pendingLimit == 1 ? " is" : "s are") already pending; cancel one or resubmit its identifier to replace it",
                identifier: r.identifier)
        }
    }

    func pending() throws -> [TaskRequest] { try records.pending().map(Self.request) }

    func pending(_ identifier: String) throws -> TaskRequest? { try records.pending(identifier).map(Self.request) }

    static func request(_ stored: TaskRecordStore.Request) -> TaskRequest {
        let r: TaskRequest
        if stored.kind == TaskKind.processing.rawValue {
            let p = ProcessingTaskRequest(identifier: stored.identifier)
            p.requiresNetworkConnectivity = stored.requiresNetwork
            p.requiresExternalPower = stored.requiresPower
            r = p
        } else {
            r = AppRefreshTaskRequest(identifier: stored.identifier)
        }
        r.earliestBeginDate = stored.earliest.map { Date(timeIntervalSince1970: $0) }
        return r
    }

    /// Takes a pending request, so that exactly one process runs it (only one submitted before
    /// `submittedBefore`, when given).
    func claim(_ identifier: String, submittedBefore: Date? = nil) throws -> TaskRequest? {
        try records.claim(identifier, submittedBefore: submittedBefore?.timeIntervalSince1970).map(Self.request)
    }

    func cancel(_ identifier: String) throws { try records.cancel(identifier) }

    func cancelAll() throws { try records.cancelAll() }

    /// Records a run, keeping the last 100 of each identifier.
    func record(_ run: TaskRun) throws {
        try records.record(
            TaskRecordStore.Run(
                identifier: run.identifier, kind: run.kind.rawValue, started: run.started.timeIntervalSince1970,
                ended: run.ended.timeIntervalSince1970, outcome: run.outcome.rawValue,
                endedUptime: run.endedReading?.uptime, boot: run.endedReading?.bootID))
    }

    /// Runs, oldest first: of one identifier or all, the last `last` of them.
    func runs(_ identifier: String?, last: Int = 1000) throws -> [TaskRun] {
        try records.runs(identifier, last: Int64(last)).map { r in
            let ended = Date(timeIntervalSince1970: r.ended)
            var reading: ClockReading?
            if let uptime = r.endedUptime, uptime.isFinite, let boot = r.boot {
                reading = ClockReading(wall: ended, uptime: uptime, bootID: boot)
            }
            return TaskRun(
                identifier: r.identifier, kind: TaskKind(rawValue: r.kind) ?? .refresh,
                started: Date(timeIntervalSince1970: r.started), ended: ended,
                outcome: TaskOutcome(rawValue: r.outcome) ?? .failure, endedReading: reading)
        }
    }

    /// Records a launch in the container's one launch record (``AppLaunchRecord``), keeping 60
    /// days of them and the first one for good.
    func recordLaunch(at date: Date) throws {
        try AppLaunchRecord.record(in: records.database, at: date)
    }

    func launches(since date: Date) throws -> [Date] {
        try AppLaunchRecord.launches(in: records.database, since: date)
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
