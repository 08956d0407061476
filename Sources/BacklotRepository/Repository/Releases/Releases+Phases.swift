import BacklotBasics
import BacklotProtocol
import BacklotStore
import Foundation

/// Phased rollouts (table `rollout_phases`): the production candidate's share raised step by step
/// (1 → 5 → 25 → 100 % over days), one step every `stepSeconds`, halted on its own (share 0) when
/// devices report that the candidate's installs fail more often than the live version's.
///
/// ```swift
/// try repository.releases.setPhasedRollout(
///     app: "com.example.game", pack: "Levels", steps: [100, 500, 2500, 10_000], stepSeconds: 86_400)
/// try repository.releases.advancePhasedRollouts()   // what `backlot serve` does every minute
/// ```
extension Releases {
    /// Sets a phased rollout of the production candidate and takes its first step now. The steps
    /// are the caller's: a step above the app's second-reviewer share needs a caller other than
    /// the person who approved the candidate's release, as raising the share by hand does.
    /// - Parameters:
    ///   - steps: shares in basis points (1…10 000), at most ``API/Limits/phaseSteps``, taken in
    ///     rising order (a share given twice, once).
    ///   - stepSeconds: how long each step lasts before the next (a minute to 30 days).
    /// - Throws: `invalidInput` for steps or a duration out of bounds; `conflict` when production
    ///   has no candidate; `fourEyes` under the second-reviewer rule; `notFound` for an unknown pack.
    @discardableResult
    public func setPhasedRollout(
        app: String, pack: String, steps: [Int], stepSeconds: Int, by caller: Caller? = nil, now: Date = Date()
    ) throws -> PhasedRolloutInfo {
        let steps = Array(Set(steps)).sorted()
        try Self.checkPhases(steps: steps, stepSeconds: stepSeconds)
        let time = Int64(now.timeIntervalSince1970)
        try db.transaction { tx in
            try Apps.requirePack(&tx, app, pack)
            guard
                let candidate = try tx.query(
                    "SELECT candidate FROM channel_packs WHERE app = ? AND channel = 'production' AND pack = ?",
                    [.text(app), .text(pack)]
                ).first?["candidate"]?.integer(as: Int.self)
            else {
                throw BacklotError(
                    .conflict, "no staged rollout on production to phase", context: "\(app)/\(pack)",
                    hint: "start one: backlot release --channel production --rollout PERCENT, approved by a reviewer")
            }
            try Self.requireSecondReviewer(
                &tx, app: app, pack: pack, candidate: candidate, basisPoints: steps.max() ?? 0, by: caller)
            let person = (caller ?? Caller.current)?.person
            try tx.run(
                """
                INSERT INTO rollout_phases(app, pack, version, steps, step_seconds, step, step_since, started, state, reason, set_by_person)
                VALUES (?, ?, ?, ?, ?, 0, ?, ?, 'running', NULL, ?)
                ON CONFLICT(app, pack) DO UPDATE SET version = excluded.version, steps = excluded.steps,
                    step_seconds = excluded.step_seconds, step = 0, step_since = excluded.step_since, started = excluded.started,
                    state = 'running', reason = NULL, set_by_person = excluded.set_by_person
                """,
                [
                    .text(app), .text(pack), .integer(Int64(candidate)),
                    .text(steps.map(String.init).joined(separator: ",")), .integer(Int64(stepSeconds)),
                    .integer(time), .integer(time), person.map { .text($0) } ?? .null,
                ])
            try AuditLog.record(
                &tx, .rolloutPhase, app: app, pack: pack, version: candidate,
                details: [
                    .channel: Channel.production.rawValue,
                    .steps: steps.map { Self.percentText(Double($0) / 100) }.joined(separator: ","),
                    .stepSeconds: String(stepSeconds),
                ])
            try takeStep(&tx, app: app, pack: pack, version: candidate, basisPoints: steps[0], last: steps.count == 1)
        }
        try publication.publish(app: app, channel: .production)
        guard let phases = try phasedRollout(app: app, pack: pack) else {
            throw BacklotError(.io, "the phased rollout was not recorded", context: "\(app)/\(pack)")
        }
        return phases
    }

    static func checkPhases(steps: [Int], stepSeconds: Int) throws {
        guard (1...API.Limits.phaseSteps).contains(steps.count) else {
            throw BacklotError(
                .invalidInput, "a phased rollout has 1 to \(API.Limits.phaseSteps) steps, not \(steps.count)",
                context: "steps", hint: "for example 1, 5, 25, 100")
        }
        guard steps.allSatisfy({ (1...10_000).contains($0) }) else {
            throw BacklotError(
                .invalidInput, "each step is a share from 0.01 to 100 %", context: "steps",
                hint: "for example 1, 5, 25, 100")
        }
        guard (API.Limits.shortestPhaseStep...API.Limits.longestPhaseStep).contains(stepSeconds) else {
            throw BacklotError(
                .invalidInput,
                "a step lasts \(API.Limits.shortestPhaseStep) s to \(API.Limits.longestPhaseStep / 86_400) days, not \(stepSeconds) s",
                context: "stepSeconds", hint: "one day is 86400")
        }
    }

    /// Puts the candidate at a step's share; 100 % (or the last step) promotes it or ends the phases.
    private func takeStep(
        _ tx: inout any MetadataConnection, app: String, pack: String, version: Int, basisPoints: Int, last: Bool
    ) throws {
        try setCandidateShare(&tx, app: app, pack: pack, candidate: version, basisPoints: basisPoints)
        if last {
            try tx.run(
                "UPDATE rollout_phases SET state = 'done' WHERE app = ? AND pack = ? AND state = 'running'",
                [.text(app), .text(pack)])
        }
    }

    /// A pack's phased rollout, nil when it never had one.
    /// - Throws: `notFound` for an unknown app or pack.
    public func phasedRollout(app: String, pack: String) throws -> PhasedRolloutInfo? {
        let row = try db.transaction { tx in
            try Apps.requirePack(&tx, app, pack)
            return try tx.query("SELECT * FROM rollout_phases WHERE app = ? AND pack = ?", [.text(app), .text(pack)])
                .first
        }
        return row.flatMap(Self.phasedRollout)
    }

    static func phasedRollout(_ r: Database.Row) -> PhasedRolloutInfo? {
        guard let app = r["app"]?.string, let pack = r["pack"]?.string,
            let version = r["version"]?.integer(as: Int.self), let steps = r["steps"]?.string,
            let seconds = r["step_seconds"]?.integer(as: Int.self), let step = r["step"]?.integer(as: Int.self),
            let since = r["step_since"]?.int, let state = r["state"]?.string
        else { return nil }
        return PhasedRolloutInfo(
            app: app, pack: pack, version: version, steps: steps.split(separator: ",").compactMap { Int($0) },
            stepSeconds: seconds, step: step, stepSince: Date(timeIntervalSince1970: Double(since)), state: state,
            reason: r["reason"]?.string, setBy: r["set_by_person"]?.string)
    }

    /// Ends a pack's running phased rollout (a reviewer changed the rollout by hand).
    static func cancelPhases(_ tx: inout any MetadataConnection, app: String, pack: String, reason: String) throws {
        try tx.run(
            "UPDATE rollout_phases SET state = 'cancelled', reason = ? WHERE app = ? AND pack = ? AND state = 'running'",
            [.text(reason), .text(app), .text(pack)])
    }

    /// Moves every running phased rollout on: each is cancelled when its version is no longer the
    /// candidate; halted (share 0) when the candidate's reported install failure rate since the
    /// phases began exceeds the live version's; otherwise raised to its next step once its step
    /// has lasted `stepSeconds`. Each change is audited and republishes the catalog.
    /// - Returns: one line per change, for the server's log.
    @discardableResult
    public func advancePhasedRollouts(now: Date = Date()) throws -> [String] {
        let time = Int64(now.timeIntervalSince1970)
        var changed: Set<String> = []
        let lines: [String] = try db.transaction { tx in
            var lines: [String] = []
            for row in try tx.query("SELECT * FROM rollout_phases WHERE state = 'running' ORDER BY app, pack", []) {
                guard let phases = Self.phasedRollout(row), let since = row["step_since"]?.int,
                    let started = row["started"]?.int
                else { continue }
                let (app, pack, version) = (phases.app, phases.pack, phases.version)
                let channel = try tx.query(
                    "SELECT live, candidate FROM channel_packs WHERE app = ? AND channel = 'production' AND pack = ?",
                    [.text(app), .text(pack)]
                ).first
                guard channel?["candidate"]?.integer(as: Int.self) == version else {
                    try Self.cancelPhases(
                        &tx, app: app, pack: pack, reason: "version \(version) is no longer the candidate")
                    lines.append(
                        "phased rollout of \(app)/\(pack): cancelled, version \(version) is no longer the candidate")
                    continue
                }
                let day = DownloadCounts.utcDay(Date(timeIntervalSince1970: Double(started)))
                let candidate = try DeviceReports.installs(
                    &tx, app: app, channel: Channel.production.rawValue, pack: pack, version: version, since: day)
                let liveVersion = channel?["live"]?.integer(as: Int.self)
                let live =
                    try liveVersion.map {
                        try DeviceReports.installs(
                            &tx, app: app, channel: Channel.production.rawValue, pack: pack, version: $0, since: day)
                    } ?? (0, 0, 0)
                if let reason = Self.haltReason(
                    version: version, candidate: candidate, liveVersion: liveVersion, live: live)
                {
                    try setCandidateShare(&tx, app: app, pack: pack, candidate: version, basisPoints: 0)
                    try tx.run(
                        "UPDATE rollout_phases SET state = 'halted', reason = ? WHERE app = ? AND pack = ?",
                        [.text(reason), .text(app), .text(pack)])
                    try AuditLog.record(
                        &tx, .rolloutHalt, app: app, pack: pack, version: version,
                        details: [.channel: Channel.production.rawValue, .percent: "0", .reason: reason], system: true)
                    lines.append("phased rollout of \(app)/\(pack): halted, \(reason)")
                    changed.insert(app)
                    continue
                }
                let next = phases.step + 1
                guard time - since >= Int64(phases.stepSeconds), next < phases.steps.count else { continue }
                let bp = phases.steps[next]
                try tx.run(
                    "UPDATE rollout_phases SET step = ?, step_since = ? WHERE app = ? AND pack = ?",
                    [.integer(Int64(next)), .integer(time), .text(app), .text(pack)])
                try takeStep(
                    &tx, app: app, pack: pack, version: version, basisPoints: bp, last: next == phases.steps.count - 1)
                let percent = Self.percentText(Double(bp) / 100)
                var details: [API.AuditDetail: String] = [
                    .channel: Channel.production.rawValue, .percent: percent, .step: String(next + 1),
                ]
                if let person = phases.setBy { details[.setBy] = person }
                try AuditLog.record(
                    &tx, .rolloutStep, app: app, pack: pack, version: version, details: details, system: true)
                lines.append("phased rollout of \(app)/\(pack): version \(version) at \(percent) %")
                changed.insert(app)
            }
            return lines
        }
        for app in changed.sorted() { try publication.publish(app: app, channel: .production) }
        return lines
    }

    /// Why a candidate's phases halt, nil while it fails no more often than the live version:
    /// some install of it failed, and its failure rate (failed of attempted, an attempt being a
    /// start or an outcome, whichever devices counted more of) exceeds the live version's (0 when
    /// the live version has no reports).
    static func haltReason(
        version: Int, candidate: (started: Int64, finished: Int64, failed: Int64), liveVersion: Int?,
        live: (started: Int64, finished: Int64, failed: Int64)
    ) -> String? {
        func attempts(_ c: (started: Int64, finished: Int64, failed: Int64)) -> Int64 {
            max(c.started, c.finished &+ c.failed)
        }
        let (ca, la) = (attempts(candidate), attempts(live))
        guard candidate.failed > 0, ca > 0 else { return nil }
        // candidate.failed / ca > live.failed / la, without division (la may be 0).
        guard la == 0 || candidate.failed.multipliedFullWidth(by: la) > live.failed.multipliedFullWidth(by: ca) else {
            return nil
        }
        func rate(_ failed: Int64, _ of: Int64) -> String {
            of == 0
                ? "no reports"
                : "\(failed) of \(of) installs failed (\(CheckedInteger.numberText((Double(failed) * 1000 / Double(of)).rounded() / 10)) %)"
        }
        let liveText = liveVersion.map { "live version \($0): \(rate(live.failed, la))" } ?? "no live version"
        return "version \(version): \(rate(candidate.failed, ca)); \(liveText)"
    }
}
