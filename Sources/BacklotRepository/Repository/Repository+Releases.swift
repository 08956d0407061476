import BacklotBasics
import BacklotCatalog
import BacklotCrypto
import BacklotFormat
import BacklotJSON
import BacklotStore
import Foundation

extension Repository {
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
                try audit(
                    &tx, "release.request", app: app, pack: pack, version: version,
                    details: ["channel": channel.rawValue, "status": "released"], by: caller)
                return nil
            }
            try tx.run(
                "UPDATE release_requests SET status = 'superseded', decided = ? WHERE app = ? AND channel = ? AND pack = ? AND status = 'pending'",
                [.integer(Self.now()), .text(app), .text(channel.rawValue), .text(pack)])
            let inserted = try tx.query(
                """
                INSERT INTO release_requests(app, channel, pack, version, rollout_bp, status, requested, requested_by, requested_by_label)
                VALUES (?, ?, ?, ?, ?, 'pending', ?, ?, ?) RETURNING id
                """,
                [
                    .text(app), .text(channel.rawValue), .text(pack), .integer(Int64(version)),
                    bp.map { .integer(Int64($0)) } ?? .null,
                    .integer(Self.now()), caller.map { .integer(Int64($0.id)) } ?? .null,
                    caller.map { .text($0.label) } ?? .null,
                ])
            guard let id = inserted.first?["id"]?.int else {
                throw BacklotError(
                    .io, "the database returned no id for the new release request", context: db.displayName)
            }
            var details = ["channel": channel.rawValue, "requestId": String(id), "status": "pending"]
            if let rolloutPercent { details["percent"] = Self.percentText(rolloutPercent) }
            try audit(&tx, "release.request", app: app, pack: pack, version: version, details: details, by: caller)
            return id
        }
        guard let requestID else {
            TestStopPoint.reach("release.committed")
            try publish(app: app, channel: channel)
            return nil
        }
        return try releaseRequest(
            try CheckedInteger.convert(requestID, to: Int.self, "the new release request id", code: .io))
    }

    /// What ``release(app:pack:version:channel:rolloutPercent:by:)`` would change, checked the
    /// same way, with nothing written.
    public func planRelease(
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
            let recorded =
                try tx.query(
                    "SELECT version FROM catalogs WHERE app = ? AND channel = ?", [.text(app), .text(channel.rawValue)]
                )
                .first?["version"]?.integer(as: UInt64.self) ?? 0
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
        try requireApp(&tx, app)
        do {
            try requirePack(&tx, app, pack)
            try requireComplete(&tx, app, pack, version)
        } catch let e as BacklotError where e.code == .notFound {
            throw BacklotError(.conflict, e.message, context: e.context, hint: e.hint)
        }
    }

    func requireComplete(_ tx: inout any MetadataConnection, _ app: String, _ pack: String, _ version: Int) throws {
        let rows = try tx.query(
            "SELECT state FROM versions WHERE app = ? AND pack = ? AND number = ? AND deleted = 0",
            [.text(app), .text(pack), .integer(Int64(version))])
        guard let state = rows.first?["state"]?.string else {
            throw BacklotError(.notFound, "no version \(version) of this pack", context: "\(app)/\(pack)")
        }
        guard state == VersionState.complete.rawValue else {
            throw BacklotError(
                .conflict, "the version is \(state), not COMPLETE", context: "\(app)/\(pack)/\(version)",
                hint: "only processed versions can be released")
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
                [.text(app), .text(channel.rawValue), .text(pack), .integer(live), .integer(Self.now())])
        }
        try tx.run(
            """
            INSERT INTO channel_packs(app, channel, pack, live, candidate, rollout_bp) VALUES (?, ?, ?, ?, NULL, 0)
            ON CONFLICT(app, channel, pack) DO UPDATE SET live = excluded.live, candidate = NULL, rollout_bp = 0
            """, [.text(app), .text(channel.rawValue), .text(pack), .integer(Int64(version))])
    }

    /// One release request.
    /// - Parameter app: when given, the request must belong to this app (a request of another app is not found).
    /// - Throws: `notFound`.
    public func releaseRequest(_ id: Int, app: String? = nil) throws -> ReleaseRequest {
        let rows = try db.read { try $0.query("SELECT * FROM release_requests WHERE id = ?", [.integer(Int64(id))]) }
        guard let r = rows.first, app == nil || r["app"]?.string == app else {
            throw BacklotError(
                .notFound, "no such release request\(app.map { " in \($0)" } ?? "")", context: "request \(id)",
                hint: "list them: backlot releases list --app APP")
        }
        return Self.releaseRequest(r)
    }

    static func releaseRequest(_ r: Database.Row) -> ReleaseRequest {
        func date(_ column: String) -> Date? { r[column]?.int.map { Date(timeIntervalSince1970: Double($0)) } }
        func token(_ column: String) -> TokenReference? {
            r[column]?.integer(as: Int.self).map { TokenReference(id: $0, label: r[column + "_label"]?.string ?? "") }
        }
        return ReleaseRequest(
            id: r["id"]?.integer(as: Int.self) ?? 0, app: r["app"]?.string ?? "",
            channel: Channel(rawValue: r["channel"]?.string ?? "") ?? .production,
            pack: r["pack"]?.string ?? "", version: r["version"]?.integer(as: Int.self) ?? 0,
            rolloutPercent: r["rollout_bp"]?.int.map { Double($0) / 100 }, status: r["status"]?.string ?? "",
            requested: date("requested") ?? Date(timeIntervalSince1970: 0), requestedBy: token("requested_by"),
            decided: date("decided"), decidedBy: token("decided_by"), reason: r["reason"]?.string)
    }

    /// The release requests of an app, oldest first, optionally of one channel and one status.
    /// - Throws: `notFound` for an unknown app; `invalidInput` for an unknown status.
    public func releaseRequests(app: String, channel: Channel? = nil, status: String? = nil) throws -> [ReleaseRequest]
    {
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
            try requireApp(&tx, app)
            return try tx.query(query, bindings)
        }.map(Self.releaseRequest)
    }

    /// Approves a pending request: the version goes live (or becomes the rollout candidate).
    /// - Parameters:
    ///   - app: when given, the request must belong to this app (else `notFound`).
    ///   - caller: who approves; with the app's four-eyes rule on, the token that asked cannot.
    /// - Throws: `notFound`; `fourEyes`; `conflict` when it is not pending, its version is no
    ///   longer COMPLETE, or it is a rollout and production has no live version to stay on.
    public func approve(requestID: Int, app: String? = nil, by caller: Caller? = nil) throws {
        let request = try releaseRequest(requestID, app: app)
        try db.transaction { tx in
            if let caller, let asker = request.requestedBy, asker.id == caller.id,
                (try tx.query("SELECT four_eyes FROM apps WHERE id = ?", [.text(request.app)]).first?["four_eyes"]?.int
                    ?? 0) != 0
            {
                throw BacklotError(
                    .fourEyes,
                    "request \(requestID) was made by token \(asker.id)\(asker.label.isEmpty ? "" : " (\(asker.label))"), "
                        + "and the app's four-eyes rule needs another token to approve it",
                    context: "request \(requestID)",
                    hint: "ask another reviewer to approve it")
            }
            guard
                try tx.run(
                    "UPDATE release_requests SET status = 'approved', decided = ?, decided_by = ?, decided_by_label = ? WHERE id = ? AND status = 'pending'",
                    [
                        .integer(Self.now()), caller.map { .integer(Int64($0.id)) } ?? .null,
                        caller.map { .text($0.label) } ?? .null,
                        .integer(Int64(requestID)),
                    ]) == 1
            else {
                throw BacklotError(
                    .conflict, "the request is \(request.status), not pending", context: "request \(requestID)")
            }
            try requireComplete(&tx, request.app, request.pack, request.version)
            let bp = request.rolloutPercent.map { Int(($0 * 100).rounded()) }
            if let bp {
                try requireRolloutBase(
                    &tx, app: request.app, pack: request.pack, version: request.version, basisPoints: bp)
            }
            try apply(
                &tx, app: request.app, channel: request.channel, pack: request.pack, version: request.version,
                basisPoints: bp)
            try audit(
                &tx, "release.approve", app: request.app, pack: request.pack, version: request.version,
                details: ["channel": request.channel.rawValue, "requestId": String(requestID)], by: caller)
        }
        TestStopPoint.reach("release.committed")
        try publish(app: request.app, channel: request.channel)
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
        let request = try releaseRequest(requestID, app: app)
        try db.transaction { tx in
            guard
                try tx.run(
                    "UPDATE release_requests SET status = 'rejected', decided = ?, reason = ?, decided_by = ?, decided_by_label = ? WHERE id = ? AND status = 'pending'",
                    [
                        .integer(Self.now()), .text(reason), caller.map { .integer(Int64($0.id)) } ?? .null,
                        caller.map { .text($0.label) } ?? .null,
                        .integer(Int64(requestID)),
                    ]) == 1
            else {
                throw BacklotError(
                    .conflict, "the request is \(request.status), not pending", context: "request \(requestID)")
            }
            try audit(
                &tx, "release.reject", app: request.app, pack: request.pack, version: request.version,
                details: ["channel": request.channel.rawValue, "requestId": String(requestID), "reason": reason],
                by: caller)
        }
    }

    /// Rolls a pack back on a channel.
    ///
    /// With a version, that COMPLETE version goes live (any candidate is dropped), if it was live
    /// on the channel before (or is live now): a rollback never publishes what no release did. Without one, a
    /// candidate being rolled out is dropped and the live version stays; with no candidate, the
    /// version that was live before the current one goes live again (the channel keeps a history).
    /// The catalog version still grows.
    /// - Returns: the version live now.
    /// - Throws: `notFound` for an unknown app or pack; `conflict` when the pack is not on the
    ///   channel, the version does not exist or is not COMPLETE, was never live on the channel, or
    ///   nothing was live before (the pack exists: each is a state it is not in, not a missing pack).
    @discardableResult
    public func rollback(app: String, pack: String, channel: Channel, to version: Int? = nil) throws -> Int {
        let live: Int = try db.transaction { tx in
            try requirePack(&tx, app, pack)
            if let version {
                do {
                    try requireComplete(&tx, app, pack, version)
                } catch let e as BacklotError where e.code == .notFound {
                    throw BacklotError(
                        .conflict, "no version \(version) of this pack to roll back to", context: "\(app)/\(pack)",
                        hint: "name a version that was live on \(channel.rawValue) (backlot versions lists them)")
                }
                // Only back to what this channel served before: a version reaches a channel first
                // through a release (and, on external and production, its approval).
                let current = try tx.query(
                    "SELECT live FROM channel_packs WHERE app = ? AND channel = ? AND pack = ?",
                    [.text(app), .text(channel.rawValue), .text(pack)]
                ).first?["live"]?.integer(as: Int.self)
                // Internal takes any COMPLETE version at once (an uploader may release it there);
                // external and production only one a reviewer approved there, or that was live there.
                let approved = try !tx.query(
                    """
                    SELECT 1 AS one FROM release_requests WHERE app = ? AND channel = ? AND pack = ? AND version = ? AND status = 'approved'
                    UNION ALL SELECT 1 AS one FROM live_history WHERE app = ? AND channel = ? AND pack = ? AND version = ?
                    """,
                    [
                        .text(app), .text(channel.rawValue), .text(pack), .integer(Int64(version)),
                        .text(app), .text(channel.rawValue), .text(pack), .integer(Int64(version)),
                    ]
                ).isEmpty
                guard channel == .internal || approved || current == version else {
                    throw BacklotError(
                        .conflict,
                        "version \(version) was never released on \(channel.rawValue), so it cannot be rolled back to",
                        context: "\(app)/\(pack)",
                        hint:
                            "release it instead (backlot release --version \(version) --channel \(channel.rawValue)), which a reviewer approves"
                    )
                }
                try apply(&tx, app: app, channel: channel, pack: pack, version: version, basisPoints: nil)
                try audit(
                    &tx, "rollback", app: app, pack: pack, version: version,
                    details: ["channel": channel.rawValue, "to": String(version)])
                return version
            }
            guard
                let row = try tx.query(
                    "SELECT live, candidate FROM channel_packs WHERE app = ? AND channel = ? AND pack = ?",
                    [.text(app), .text(channel.rawValue), .text(pack)]
                ).first,
                let live = row["live"]?.integer(as: Int.self)
            else {
                throw BacklotError(.conflict, "the pack is not on \(channel.rawValue)", context: "\(app)/\(pack)")
            }
            if row["candidate"]?.int != nil {
                try tx.run(
                    "UPDATE channel_packs SET candidate = NULL, rollout_bp = 0 WHERE app = ? AND channel = ? AND pack = ?",
                    [.text(app), .text(channel.rawValue), .text(pack)])
                try audit(
                    &tx, "rollback", app: app, pack: pack, version: live,
                    details: ["channel": channel.rawValue, "to": String(live), "candidate": "dropped"])
                return live
            }
            // The newest earlier live version that can still be served; entries passed over go.
            let history = try tx.query(
                """
                SELECT h.id AS id, h.version AS version, v.state AS state FROM live_history h
                LEFT JOIN versions v ON v.app = h.app AND v.pack = h.pack AND v.number = h.version AND v.deleted = 0
                WHERE h.app = ? AND h.channel = ? AND h.pack = ? ORDER BY h.id DESC
                """, [.text(app), .text(channel.rawValue), .text(pack)])
            guard
                let previous = history.first(where: {
                    $0["state"]?.string == VersionState.complete.rawValue
                        && $0["version"]?.integer(as: Int.self) != live
                }),
                let number = previous["version"]?.integer(as: Int.self), let entry = previous["id"]?.int
            else {
                throw BacklotError(
                    .conflict, "no earlier version was live on \(channel.rawValue) to go back to",
                    context: "\(app)/\(pack)",
                    hint: "name the version to put live (--version N)")
            }
            try tx.run(
                "DELETE FROM live_history WHERE app = ? AND channel = ? AND pack = ? AND id >= ?",
                [.text(app), .text(channel.rawValue), .text(pack), .integer(entry)])
            try apply(&tx, app: app, channel: channel, pack: pack, version: number, basisPoints: nil, remember: false)
            try audit(
                &tx, "rollback", app: app, pack: pack, version: number,
                details: ["channel": channel.rawValue, "from": String(live), "to": String(number)])
            return number
        }
        try publish(app: app, channel: channel)
        return live
    }

    /// Changes the production candidate's rollout share: 100 makes it the live version; 0 halts
    /// it (it stays the candidate, no device takes it, raise the share again to resume).
    /// - Throws: `conflict` when there is no candidate; `invalidInput` outside 0…100.
    public func setRollout(app: String, pack: String, percent: Double) throws {
        guard percent.isFinite, percent >= 0, percent <= 100 else {
            throw BacklotError(
                .invalidInput, "the rollout percentage must be 0…100", context: "percent",
                hint: "0 halts the rollout, 100 releases to every device")
        }
        let bp = Int((percent * 100).rounded())
        try db.transaction { tx in
            try requirePack(&tx, app, pack)
            let rows = try tx.query(
                "SELECT candidate FROM channel_packs WHERE app = ? AND channel = 'production' AND pack = ?",
                [.text(app), .text(pack)])
            guard let candidate = rows.first?["candidate"]?.integer(as: Int.self) else {
                throw BacklotError(
                    .conflict, "no staged rollout on production", context: "\(app)/\(pack)",
                    hint: "start one: backlot release --channel production --rollout PERCENT")
            }
            if bp >= 10_000 {
                try apply(&tx, app: app, channel: .production, pack: pack, version: candidate, basisPoints: nil)
            } else {
                try tx.run(
                    "UPDATE channel_packs SET rollout_bp = ? WHERE app = ? AND channel = 'production' AND pack = ?",
                    [.integer(Int64(bp)), .text(app), .text(pack)])
            }
            try audit(
                &tx, "rollout.set", app: app, pack: pack, version: candidate,
                details: ["channel": "production", "percent": Self.percentText(percent)])
        }
        try publish(app: app, channel: .production)
    }

    /// Removes a pack from a channel: clients then report it as obsolete.
    /// - Throws: `notFound` for an unknown app or pack; `conflict` when the pack is not on the channel.
    public func withdraw(app: String, pack: String, channel: Channel) throws {
        try db.transaction { tx in
            try requirePack(&tx, app, pack)
            guard
                try tx.run(
                    "DELETE FROM channel_packs WHERE app = ? AND channel = ? AND pack = ?",
                    [.text(app), .text(channel.rawValue), .text(pack)]) == 1
            else {
                // The pack exists (requirePack): it is in the wrong state for this, not missing.
                throw BacklotError(.conflict, "the pack is not on \(channel.rawValue)", context: "\(app)/\(pack)")
            }
            try audit(&tx, "withdraw", app: app, pack: pack, details: ["channel": channel.rawValue])
        }
        try publish(app: app, channel: channel)
    }

    /// What a channel publishes, from the record (``ChannelState``). - Throws: `notFound` for an unknown app.
    public func channelState(app: String, channel: Channel) throws -> ChannelState {
        let key = try directory.signingKey().publicKey.keyID
        return try db.transaction { tx in
            try requireApp(&tx, app)
            let catalog = try tx.query(
                "SELECT version, expires FROM catalogs WHERE app = ? AND channel = ?",
                [.text(app), .text(channel.rawValue)]
            ).first
            let rows = try tx.query(
                """
                SELECT c.pack AS pack, c.live AS live, c.candidate AS candidate, c.rollout_bp AS bp, v.archive_sha256 AS sha FROM channel_packs c
                LEFT JOIN versions v ON v.app = c.app AND v.pack = c.pack AND v.number = c.live
                WHERE c.app = ? AND c.channel = ? AND c.live IS NOT NULL ORDER BY c.pack
                """, [.text(app), .text(channel.rawValue)])
            let packs = rows.compactMap { r -> ChannelState.Pack? in
                guard let pack = r["pack"]?.string else { return nil }
                let candidate = r["candidate"]?.integer(as: Int.self)
                return ChannelState.Pack(
                    pack: pack, liveVersion: r["live"]?.integer(as: Int.self), liveArchiveSHA256: r["sha"]?.string,
                    candidateVersion: candidate,
                    candidatePercent: candidate == nil ? nil : Double(r["bp"]?.int ?? 0) / 100)
            }
            return ChannelState(
                app: app, channel: channel, catalogVersion: catalog?["version"]?.integer(as: UInt64.self),
                expires: catalog?["expires"]?.int.map { Date(timeIntervalSince1970: Double($0)) }, signingKey: key,
                packs: packs)
        }
    }
}
