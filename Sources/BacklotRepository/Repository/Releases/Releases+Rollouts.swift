import BacklotBasics
import BacklotProtocol
import BacklotStore
import Foundation

/// Changing what a channel serves after a release: rollbacks, the production rollout's share, withdrawals.
extension Releases {
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
            try Apps.requirePack(&tx, app, pack)
            if let version {
                do {
                    try Uploads.requireComplete(&tx, app, pack, version)
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
                let wasLive =
                    try current == version
                    || !tx.query(
                        "SELECT 1 AS one FROM live_history WHERE app = ? AND channel = ? AND pack = ? AND version = ?",
                        [.text(app), .text(channel.rawValue), .text(pack), .integer(Int64(version))]
                    ).isEmpty
                let approved =
                    try wasLive
                    || !tx.query(
                        """
                        SELECT 1 AS one FROM release_requests
                        WHERE app = ? AND channel = ? AND pack = ? AND version = ? AND status = 'approved'
                        """, [.text(app), .text(channel.rawValue), .text(pack), .integer(Int64(version))]
                    ).isEmpty
                guard channel == .internal || approved else {
                    throw BacklotError(
                        .conflict,
                        "version \(version) was never released on \(channel.rawValue), so it cannot be rolled back to",
                        context: "\(app)/\(pack)",
                        hint:
                            "release it instead (backlot release --version \(version) --channel \(channel.rawValue)), which a reviewer approves"
                    )
                }
                // A version production never served to every device (approved for a staged share
                // only) goes to all of them here: the app's second-reviewer rule holds as for
                // raising its rollout, or whoever approved it could take it to 100 % alone.
                if channel == .production, !wasLive {
                    try Self.requireSecondReviewer(
                        &tx, app: app, pack: pack, candidate: version, basisPoints: 10_000, by: nil)
                }
                try apply(&tx, app: app, channel: channel, pack: pack, version: version, basisPoints: nil)
                try AuditLog.record(
                    &tx, .rollback, app: app, pack: pack, version: version,
                    details: [.channel: channel.rawValue, .to: String(version)])
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
                try AuditLog.record(
                    &tx, .rollback, app: app, pack: pack, version: live,
                    details: [.channel: channel.rawValue, .to: String(live), .candidate: "dropped"])
                return live
            }
            // The newest earlier live version that can still be served; entries passed over go.
            let history = try tx.query(
                "SELECT id, version FROM live_history WHERE app = ? AND channel = ? AND pack = ? ORDER BY id DESC",
                [.text(app), .text(channel.rawValue), .text(pack)])
            let facts = try Uploads.facts(
                &tx, app: app,
                of: history.compactMap { $0["version"]?.integer(as: Int.self) }.map {
                    Uploads.VersionKey(pack: pack, number: $0)
                })
            // Still servable: not deleted, and COMPLETE.
            func servable(_ number: Int?) -> Bool {
                guard let number, let f = facts[Uploads.VersionKey(pack: pack, number: number)] else { return false }
                return !f.deleted && f.state == VersionState.complete.rawValue
            }
            guard
                let previous = history.first(where: {
                    servable($0["version"]?.integer(as: Int.self)) && $0["version"]?.integer(as: Int.self) != live
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
            try AuditLog.record(
                &tx, .rollback, app: app, pack: pack, version: number,
                details: [.channel: channel.rawValue, .from: String(live), .to: String(number)])
            return number
        }
        try publication.publish(app: app, channel: channel)
        return live
    }

    /// Changes the production candidate's rollout share: 100 makes it the live version; 0 halts
    /// it (it stays the candidate, no device takes it, raise the share again to resume).
    /// - Throws: `conflict` when there is no candidate; `invalidInput` outside 0…100.
    public func setRollout(app: String, pack: String, percent: Double, by caller: Caller? = nil) throws {
        guard percent.isFinite, percent >= 0, percent <= 100 else {
            throw BacklotError(
                .invalidInput, "the rollout percentage must be 0…100", context: "percent",
                hint: "0 halts the rollout, 100 releases to every device")
        }
        let bp = Int((percent * 100).rounded())
        try db.transaction { tx in
            try Apps.requirePack(&tx, app, pack)
            let rows = try tx.query(
                "SELECT candidate, rollout_bp FROM channel_packs WHERE app = ? AND channel = 'production' AND pack = ?",
                [.text(app), .text(pack)])
            guard let candidate = rows.first?["candidate"]?.integer(as: Int.self) else {
                throw BacklotError(
                    .conflict, "no staged rollout on production", context: "\(app)/\(pack)",
                    hint: "start one: backlot release --channel production --rollout PERCENT")
            }
            // Lowering a rollout (an incident) is never held back: the rule is for raising it.
            let now = rows.first?["rollout_bp"]?.integer(as: Int.self) ?? 0
            if bp > now {
                try Self.requireSecondReviewer(
                    &tx, app: app, pack: pack, candidate: candidate, basisPoints: bp, by: caller)
            }
            // A share set by hand ends a phased rollout: the reviewer has taken over.
            try Self.cancelPhases(
                &tx, app: app, pack: pack, reason: "the rollout was set to \(Self.percentText(percent)) % by hand")
            try setCandidateShare(&tx, app: app, pack: pack, candidate: candidate, basisPoints: bp)
            try AuditLog.record(
                &tx, .rolloutSet, app: app, pack: pack, version: candidate,
                details: [.channel: Channel.production.rawValue, .percent: Self.percentText(percent)])
        }
        try publication.publish(app: app, channel: .production)
    }

    /// Puts the production candidate at a share of devices; 100 % (10,000 basis points) makes it
    /// the live version.
    func setCandidateShare(
        _ tx: inout any MetadataConnection, app: String, pack: String, candidate: Int, basisPoints: Int
    ) throws {
        if basisPoints >= 10_000 {
            try apply(&tx, app: app, channel: .production, pack: pack, version: candidate, basisPoints: nil)
        } else {
            try tx.run(
                "UPDATE channel_packs SET rollout_bp = ? WHERE app = ? AND channel = 'production' AND pack = ?",
                [.integer(Int64(basisPoints)), .text(app), .text(pack)])
        }
    }

    /// An app's second-reviewer rule: a step above its share must be made by another person than
    /// the one who approved the release of the candidate (so that two people agreed before most
    /// devices get it). A step at or below the share, a caller of the server itself, and an app
    /// without the rule pass. (The approval itself is held to the share:
    /// ``requireApprovalWithinShare(_:app:pack:basisPoints:)``.)
    /// - Throws: ``BacklotError/Code/fourEyes`` naming who approved and the share.
    static func requireSecondReviewer(
        _ tx: inout any MetadataConnection, app: String, pack: String, candidate: Int, basisPoints: Int,
        by caller: Caller?
    ) throws {
        guard let who = caller ?? Caller.current, let threshold = try Apps.secondReviewerThreshold(&tx, app),
            basisPoints > threshold
        else { return }
        let approval = try tx.query(
            """
            SELECT decided_by, decided_by_person FROM release_requests
            WHERE app = ? AND channel = 'production' AND pack = ? AND version = ? AND status = 'approved'
            ORDER BY id DESC LIMIT 1
            """, [.text(app), .text(pack), .integer(Int64(candidate))]
        ).first
        guard let approverID = approval?["decided_by"]?.integer(as: Int.self) else { return }
        let approver =
            approval?["decided_by_person"]?.string ?? TokenReference.defaultPerson(ofToken: approverID)
        guard Tokens.samePerson(approver, who.person) else { return }
        throw BacklotError(
            .fourEyes,
            "\(approver) approved version \(candidate)'s release, and the app's second-reviewer rule needs another person to take its rollout above \(percentText(Double(threshold) / 100)) %",
            context: "\(app)/\(pack)", hint: "ask another reviewer to raise the rollout")
    }

    /// An app's second-reviewer rule at approval: a staged update of production (a version is live)
    /// may be approved up to the rule's share only, so that whoever approves it cannot take it
    /// further alone; another person raises it (``requireSecondReviewer``). A first release, with
    /// nothing live to stay on, goes to every device as before, unless the approver is the person
    /// who last withdrew the pack from production: withdrawing, then approving for every device,
    /// would otherwise be one person's way round the rule (another person may approve it).
    /// - Throws: ``BacklotError/Code/fourEyes`` naming the share, or who withdrew the pack.
    static func requireApprovalWithinShare(
        _ tx: inout any MetadataConnection, app: String, pack: String, basisPoints: Int?, by caller: Caller?
    ) throws {
        guard let threshold = try Apps.secondReviewerThreshold(&tx, app), (basisPoints ?? 10_000) > threshold else {
            return
        }
        let share = percentText(Double(threshold) / 100)
        guard try liveVersion(&tx, app: app, channel: Channel.production.rawValue, pack: pack) != nil else {
            guard let who = caller ?? Caller.current,
                let withdrawer = try AuditLog.lastPerson(
                    &tx, of: .withdraw, app: app, pack: pack, channel: Channel.production.rawValue),
                Tokens.samePerson(withdrawer, who.person)
            else { return }
            throw BacklotError(
                .fourEyes,
                "\(withdrawer) withdrew this pack from production, and the app's second-reviewer rule needs another person to approve its return to more than \(share) % of devices",
                context: "\(app)/\(pack)", hint: "ask another reviewer to approve it")
        }
        throw BacklotError(
            .fourEyes,
            "the app's second-reviewer rule lets an approval take an update of production to at most \(share) % of devices",
            context: "\(app)/\(pack)",
            hint: "ask for the release with --rollout \(share) or less; another reviewer then raises it"
        )
    }

    /// Removes a pack from a channel: clients then report it as obsolete.
    /// - Throws: `notFound` for an unknown app or pack; `conflict` when the pack is not on the channel.
    public func withdraw(app: String, pack: String, channel: Channel) throws {
        try db.transaction { tx in
            try Apps.requirePack(&tx, app, pack)
            guard
                try tx.run(
                    "DELETE FROM channel_packs WHERE app = ? AND channel = ? AND pack = ?",
                    [.text(app), .text(channel.rawValue), .text(pack)]) == 1
            else {
                // The pack exists (requirePack): it is in the wrong state for this, not missing.
                throw BacklotError(.conflict, "the pack is not on \(channel.rawValue)", context: "\(app)/\(pack)")
            }
            try AuditLog.record(&tx, .withdraw, app: app, pack: pack, details: [.channel: channel.rawValue])
        }
        try publication.publish(app: app, channel: channel)
    }
}
