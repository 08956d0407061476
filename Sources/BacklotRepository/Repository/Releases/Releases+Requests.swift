import BacklotBasics
import BacklotProtocol
import BacklotStore
import Foundation

/// Release requests: listed, approved (with the app's four-eyes rule) and rejected.
extension Releases {
    /// One release request.
    /// - Parameter app: when given, the request must belong to this app (a request of another app is not found).
    /// - Throws: `notFound`.
    public func request(_ id: Int, app: String? = nil) throws -> ReleaseRequest {
        let found = try db.read { tx -> ReleaseRequest? in
            let rows = try tx.query("SELECT * FROM release_requests WHERE id = ?", [.integer(Int64(id))])
            guard let r = rows.first, let owner = r["app"]?.string, app == nil || owner == app else { return nil }
            return try Self.requestInfos(&tx, app: owner, rows).first
        }
        guard let found else {
            throw BacklotError(
                .notFound, "no such release request\(app.map { " in \($0)" } ?? "")", context: "request \(id)",
                hint: "list them: backlot releases list --app APP")
        }
        return found
    }

    /// Requests of `app` from their rows, each with the notes of the version it releases (read from ``Uploads``).
    static func requestInfos(
        _ tx: inout any MetadataConnection, app: String, _ rows: [Database.Row]
    ) throws -> [ReleaseRequest] {
        func key(_ r: Database.Row) -> Uploads.VersionKey? {
            guard let pack = r["pack"]?.string, let n = r["version"]?.integer(as: Int.self) else { return nil }
            return Uploads.VersionKey(pack: pack, number: n)
        }
        let facts = try Uploads.facts(&tx, app: app, of: rows.compactMap(key))
        return rows.map { requestInfo($0, notes: key($0).flatMap { facts[$0]?.notes }) }
    }

    static func requestInfo(_ r: Database.Row, notes: String?) -> ReleaseRequest {
        func date(_ column: String) -> Date? { r[column]?.int.map { Date(timeIntervalSince1970: Double($0)) } }
        func token(_ column: String) -> TokenReference? {
            r[column]?.integer(as: Int.self).map {
                TokenReference(
                    id: $0, label: r[column + "_label"]?.string ?? "",
                    person: r[column + "_person"]?.string ?? TokenReference.defaultPerson(ofToken: $0))
            }
        }
        return ReleaseRequest(
            id: r["id"]?.integer(as: Int.self) ?? 0, app: r["app"]?.string ?? "",
            channel: Channel(rawValue: r["channel"]?.string ?? "") ?? .production,
            pack: r["pack"]?.string ?? "", version: r["version"]?.integer(as: Int.self) ?? 0,
            rolloutPercent: r["rollout_bp"]?.int.map { Double($0) / 100 }, status: r["status"]?.string ?? "",
            requested: date("requested") ?? Date(timeIntervalSince1970: 0), requestedBy: token("requested_by"),
            decided: date("decided"), decidedBy: token("decided_by"), reason: r["reason"]?.string, notes: notes)
    }

    /// The release requests of an app, oldest first, optionally of one channel and one status.
    /// - Throws: `notFound` for an unknown app; `invalidInput` for an unknown status.
    public func requests(app: String, channel: Channel? = nil, status: String? = nil) throws -> [ReleaseRequest] {
        if let status, !ReleaseRequest.statuses.contains(status) {
            throw BacklotError(
                .invalidInput, "no status \"\(status)\"", context: "status",
                hint: "use \(ReleaseRequest.statuses.joined(separator: ", "))")
        }
        var sql = "SELECT * FROM release_requests WHERE app = ?"
        var bindings: [Database.Value] = [.text(app)]
        if let channel {
            sql += " AND channel = ?"
            bindings.append(.text(channel.rawValue))
        }
        if let status {
            sql += " AND status = ?"
            bindings.append(.text(status))
        }
        let query = sql + " ORDER BY id"
        return try db.transaction { tx in
            try Apps.requireApp(&tx, app)
            return try Self.requestInfos(&tx, app: app, try tx.query(query, bindings))
        }
    }

    /// Approves a pending request: the version goes live (or becomes the rollout candidate).
    /// - Parameters:
    ///   - app: when given, the request must belong to this app (else `notFound`).
    ///   - caller: who approves; with the app's four-eyes rule on, the token that asked cannot.
    /// - Throws: `notFound`; `fourEyes`; `conflict` when it is not pending, its version is no
    ///   longer COMPLETE, or it is a rollout and production has no live version to stay on.
    public func approve(requestID: Int, app: String? = nil, by caller: Caller? = nil) throws {
        let request = try self.request(requestID, app: app)
        try db.transaction { tx in
            if let caller, let asker = request.requestedBy, Tokens.samePerson(asker.person, caller.person),
                try Apps.hasFourEyes(&tx, request.app)
            {
                throw BacklotError(
                    .fourEyes,
                    "request \(requestID) was made by \(asker.person) (token \(asker.id)\(asker.label.isEmpty ? "" : ", \(asker.label)")), "
                        + "and the app's four-eyes rule needs another person to approve it, whichever token \(asker.person) uses",
                    context: "request \(requestID)",
                    hint: "ask another reviewer to approve it")
            }
            try Self.decide(&tx, requestID, request, "approved", reason: nil, by: caller)
            try Uploads.requireComplete(&tx, request.app, request.pack, request.version)
            let bp = request.rolloutPercent.map { Int(($0 * 100).rounded()) }
            if request.channel == .production {
                try Self.requireApprovalWithinShare(
                    &tx, app: request.app, pack: request.pack, basisPoints: bp, by: caller)
            }
            if let bp {
                try requireRolloutBase(
                    &tx, app: request.app, pack: request.pack, version: request.version, basisPoints: bp)
            }
            try apply(
                &tx, app: request.app, channel: request.channel, pack: request.pack, version: request.version,
                basisPoints: bp)
            try AuditLog.record(
                &tx, .releaseApprove, app: request.app, pack: request.pack, version: request.version,
                details: [.channel: request.channel.rawValue, .requestId: String(requestID)], by: caller)
        }
        TestStopPoint.reach("release.committed")
        try publication.publish(app: request.app, channel: request.channel)
    }

    /// Records the decision on a request that is still pending: `status` (`approved` or
    /// `rejected`), when, by whom, and a rejection's reason.
    /// - Throws: `conflict` when it was decided meanwhile (`request` is what was read before).
    private static func decide(
        _ tx: inout any MetadataConnection, _ requestID: Int, _ request: ReleaseRequest, _ status: String,
        reason: String?, by caller: Caller?
    ) throws {
        guard
            try tx.run(
                "UPDATE release_requests SET status = ?, decided = ?, reason = ?, decided_by = ?, decided_by_label = ?, decided_by_person = ? WHERE id = ? AND status = 'pending'",
                [
                    .text(status), .integer(Repository.now()), reason.map { .text($0) } ?? .null,
                    caller.map { .integer(Int64($0.id)) } ?? .null, caller.map { .text($0.label) } ?? .null,
                    caller.map { .text($0.person) } ?? .null, .integer(Int64(requestID)),
                ]) == 1
        else {
            throw BacklotError(
                .conflict, "the request is \(request.status), not pending", context: "request \(requestID)")
        }
    }

    /// Rejects a pending request.
    /// - Parameter app: when given, the request must belong to this app (else `notFound`).
    public func reject(requestID: Int, app: String? = nil, reason: String, by caller: Caller? = nil) throws {
        // Shown in `releases list`, the dashboard and the audit trail: one line of text.
        if let problem = DisplayText.problem(in: reason) {
            throw BacklotError(
                .invalidInput, "a rejection's reason \(problem)", context: "reason",
                hint: "give the reason as one line of text")
        }
        let request = try self.request(requestID, app: app)
        try db.transaction { tx in
            try Self.decide(&tx, requestID, request, "rejected", reason: reason, by: caller)
            try AuditLog.record(
                &tx, .releaseReject, app: request.app, pack: request.pack, version: request.version,
                details: [.channel: request.channel.rawValue, .requestId: String(requestID), .reason: reason],
                by: caller)
        }
    }
}
