import BacklotBasics
import BacklotProtocol
import BacklotStore
import Foundation

/// Releases and rollouts (tables `channel_packs`, `live_history` and `release_requests`): what
/// each channel serves, release requests and their approval (with an app's four-eyes rule),
/// staged rollouts on production, rollbacks and withdrawals. Every change republishes the
/// channel's catalog (``Publication/publish(app:channel:now:)``).
///
/// ```swift
/// try repository.releases.release(app: "com.example.game", pack: "Levels", version: 3, channel: .internal)
/// if let request = try repository.releases.release(
///     app: "com.example.game", pack: "Levels", version: 3, channel: .production, rolloutPercent: 10)
/// {
///     try repository.releases.approve(requestID: request.id, by: reviewer)
/// }
/// ```
public final class Releases: Sendable {
    let db: any MetadataDatabase
    let directory: RepositoryDirectory
    let publication: Publication

    init(db: any MetadataDatabase, directory: RepositoryDirectory, publication: Publication) {
        self.db = db
        self.directory = directory
        self.publication = publication
    }

    /// Releases a COMPLETE version: at once on `internal`; as a request awaiting approval on
    /// `external` and `production` (a newer request supersedes a pending one).
    /// - Parameters:
    ///   - rolloutPercent: production only: the share of devices that take it while the live
    ///     version stays for the others (above 0, at most 100).
    ///   - caller: who asks (recorded, and checked against the app's four-eyes rule at approval).
    /// - Returns: the pending request, or nil when it was released at once.
    /// - Throws: `notFound` for an unknown app; `conflict` for a pack or version the app does not
    ///   have, a version that is not COMPLETE, or a rollout when production has no live version of
    ///   the pack to stay on; `invalidInput` for a bad percentage.
    @discardableResult
    public func release(
        app: String, pack: String, version: Int, channel: Channel, rolloutPercent: Double? = nil,
        by caller: Caller? = nil
    ) throws -> ReleaseRequest? {
        let bp = try Self.basisPoints(rolloutPercent, channel: channel)
        let requestID: Int64? = try db.transaction { tx in
            try requireNamedVersion(&tx, app, pack, version)
            if let bp { try requireRolloutBase(&tx, app: app, pack: pack, version: version, basisPoints: bp) }
            guard channel != .internal else {
                try apply(&tx, app: app, channel: channel, pack: pack, version: version, basisPoints: nil)
                try AuditLog.record(
                    &tx, .releaseRequest, app: app, pack: pack, version: version,
                    details: [.channel: channel.rawValue, .status: "released"], by: caller)
                return nil
            }
            try tx.run(
                "UPDATE release_requests SET status = 'superseded', decided = ? WHERE app = ? AND channel = ? AND pack = ? AND status = 'pending'",
                [.integer(Repository.now()), .text(app), .text(channel.rawValue), .text(pack)])
            let inserted = try tx.query(
                """
                INSERT INTO release_requests(app, channel, pack, version, rollout_bp, status, requested, requested_by, requested_by_label,
                    requested_by_person)
                VALUES (?, ?, ?, ?, ?, 'pending', ?, ?, ?, ?) RETURNING id
                """,
                [
                    .text(app), .text(channel.rawValue), .text(pack), .integer(Int64(version)),
                    bp.map { .integer(Int64($0)) } ?? .null,
                    .integer(Repository.now()), caller.map { .integer(Int64($0.id)) } ?? .null,
                    caller.map { .text($0.label) } ?? .null, caller.map { .text($0.person) } ?? .null,
                ])
            guard let id = inserted.first?["id"]?.int else {
                throw BacklotError(
                    .io, "the database returned no id for the new release request", context: db.displayName)
            }
            var details: [API.AuditDetail: String] = [
                .channel: channel.rawValue, .requestId: String(id), .status: "pending",
            ]
            if let rolloutPercent { details[.percent] = Self.percentText(rolloutPercent) }
            try AuditLog.record(
                &tx, .releaseRequest, app: app, pack: pack, version: version, details: details, by: caller)
            return id
        }
        guard let requestID else {
            TestStopPoint.reach("release.committed")
            try publication.publish(app: app, channel: channel)
            return nil
        }
        return try request(
            try CheckedInteger.convert(requestID, to: Int.self, "the new release request id", code: .io))
    }

    /// What ``release(app:pack:version:channel:rolloutPercent:by:)`` would change, checked the
    /// same way, with nothing written.
    public func plan(
        app: String, pack: String, version: Int, channel: Channel, rolloutPercent: Double? = nil
    ) throws -> ReleasePlan {
        let bp = try Self.basisPoints(rolloutPercent, channel: channel)
        return try db.transaction { tx in
            try requireNamedVersion(&tx, app, pack, version)
            if let bp { try requireRolloutBase(&tx, app: app, pack: pack, version: version, basisPoints: bp) }
            let row = try tx.query(
                "SELECT live, candidate, rollout_bp FROM channel_packs WHERE app = ? AND channel = ? AND pack = ?",
                [.text(app), .text(channel.rawValue), .text(pack)]
            ).first
            let candidate = row?["candidate"]?.integer(as: Int.self)
            let recorded = try Publication.recordedVersion(&tx, app: app, channel: channel)
            let rollsOut = bp.map { $0 < 10_000 } ?? false
            return ReleasePlan(
                channel: channel, pack: pack, fromVersion: candidate ?? row?["live"]?.integer(as: Int.self),
                fromPercent: candidate == nil ? nil : Double(row?["rollout_bp"]?.int ?? 0) / 100,
                toVersion: version, toPercent: rollsOut ? rolloutPercent : nil,
                catalogVersion: Catalog.nextVersion(after: recorded, now: Date()), needsApproval: channel != .internal)
        }
    }

    /// A rollout percentage as basis points: production only, above 0 and at most 100.
    static func basisPoints(_ percent: Double?, channel: Channel) throws -> Int? {
        guard let p = percent else { return nil }
        guard channel == .production else {
            throw BacklotError(.invalidInput, "staged rollouts are for the production channel only", context: "rollout")
        }
        guard p.isFinite, p > 0, p <= 100 else {
            throw BacklotError(
                .invalidInput, "the rollout percentage must be above 0 and at most 100", context: "rollout")
        }
        return Int((p * 100).rounded())
    }

    /// A rollout needs a live version on production for the other devices to stay on, and a version other than it.
    func requireRolloutBase(
        _ tx: inout any MetadataConnection, app: String, pack: String, version: Int, basisPoints: Int
    ) throws {
        guard basisPoints < 10_000 else { return }
        let live = try tx.query(
            "SELECT live FROM channel_packs WHERE app = ? AND channel = 'production' AND pack = ?",
            [.text(app), .text(pack)]
        )
        .first?["live"]?.integer(as: Int.self)
        guard let live else {
            throw BacklotError(
                .conflict, "production has no live version of this pack for the other devices to stay on",
                context: "\(app)/\(pack)",
                hint: "release it to every device first (no rollout), then roll the next version out")
        }
        guard live != version else {
            throw BacklotError(
                .conflict, "version \(version) is live on production already", context: "\(app)/\(pack)",
                hint: "roll out another version, or change the current rollout (backlot rollout)")
        }
    }

    /// A pack and version a release names in its body, not its path: the app must exist (404),
    /// and a pack or version it does not have is a conflict with what it holds (409), as a version
    /// that is not COMPLETE — a 404 would say the app in the path is missing.
    func requireNamedVersion(_ tx: inout any MetadataConnection, _ app: String, _ pack: String, _ version: Int) throws {
        try Apps.requireApp(&tx, app)
        do {
            try Apps.requirePack(&tx, app, pack)
            try Uploads.requireComplete(&tx, app, pack, version)
        } catch let e as BacklotError where e.code == .notFound {
            throw BacklotError(.conflict, e.message, context: e.context, hint: e.hint)
        }
    }

    /// Puts `version` live on the channel, or — with a share below 100 % — makes it the candidate
    /// beside the live version (the caller checked there is one). A live version replaced goes on
    /// the channel's history, for ``rollback(app:pack:channel:to:)``.
    func apply(
        _ tx: inout any MetadataConnection, app: String, channel: Channel, pack: String, version: Int,
        basisPoints: Int?, remember: Bool = true
    ) throws {
        let current = try tx.query(
            "SELECT live FROM channel_packs WHERE app = ? AND channel = ? AND pack = ?",
            [.text(app), .text(channel.rawValue), .text(pack)])
        let live = current.first?["live"]?.int
        if let bp = basisPoints, bp < 10_000 {
            guard let live, live != Int64(version) else {
                throw BacklotError(
                    .conflict,
                    "\(channel.rawValue) has no other live version of this pack for the other devices to stay on",
                    context: "\(app)/\(pack)",
                    hint: "release it to every device first (no rollout), then roll the next version out")
            }
            try tx.run(
                "UPDATE channel_packs SET candidate = ?, rollout_bp = ? WHERE app = ? AND channel = ? AND pack = ?",
                [.integer(Int64(version)), .integer(Int64(bp)), .text(app), .text(channel.rawValue), .text(pack)])
            return
        }
        if remember, let live, live != Int64(version) {
            try tx.run(
                "INSERT INTO live_history(app, channel, pack, version, replaced) VALUES (?, ?, ?, ?, ?)",
                [.text(app), .text(channel.rawValue), .text(pack), .integer(live), .integer(Repository.now())])
        }
        try tx.run(
            """
            INSERT INTO channel_packs(app, channel, pack, live, candidate, rollout_bp) VALUES (?, ?, ?, ?, NULL, 0)
            ON CONFLICT(app, channel, pack) DO UPDATE SET live = excluded.live, candidate = NULL, rollout_bp = 0
            """, [.text(app), .text(channel.rawValue), .text(pack), .integer(Int64(version))])
    }

    /// A percentage as the audit trail writes it: `10`, `12.5`.
    static func percentText(_ percent: Double) -> String { CheckedInteger.numberText(percent) }
}
