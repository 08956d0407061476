import BacklotBasics
import BacklotProtocol
import BacklotStore
import Foundation

/// Resumable uploads: begun or continued at the byte received, owned by the token that created the
/// version, leased to one request at a time in a shared store, removed when abandoned.
extension Uploads {
    /// Starts or resumes an upload at `offset` (which must equal the bytes already received).
    ///
    /// With a shared archive store (a bucket), the upload is leased to this server in the
    /// metadata while the request runs, so that two servers never append to one upload at once;
    /// a server that dies leaves a lease that runs out after ``leaseDuration``.
    ///
    /// An upload belongs to the token that created its version: another token — unless it is an
    /// admin token — may neither continue nor finish it (it could otherwise put other bytes in
    /// an archive whose digest was not declared).
    /// - Parameter caller: who asks (default ``Caller/current``); nil, a command on the data folder, may upload any version.
    /// - Throws: `forbidden` when the version was created by another token and `caller` is not an
    ///   admin (naming the token that may continue it); `conflict` when the version is not
    ///   awaiting an upload, the offset is wrong, or another upload to it is running (here or on
    ///   another server).
    public func beginUpload(
        app: String, pack: String, number: Int, offset: UInt64, by caller: Caller? = Caller.current
    ) throws -> Upload {
        let row = try versionRow(app: app, pack: pack, number: number)
        try requireUploader(row, caller, label: "\(app)/\(pack)/\(number)")
        guard row["state"]?.string == VersionState.awaitingUpload.rawValue, let id = row["id"]?.int else {
            throw BacklotError(
                .conflict, "the version is not awaiting an upload (it is \(row["state"]?.string ?? "?"))",
                context: "\(app)/\(pack)/\(number)", hint: "create a new version to upload another archive")
        }
        let record = uploadRecord(row)
        let leased = archives.isShared
        let owner = uploadLeaseOwner()
        if leased, !(try claimVersion(id, state: .awaitingUpload, owner: owner)) {
            throw BacklotError(
                .conflict, "another upload to this version is in progress (on this server or another)",
                context: record.label,
                hint: "wait for it to end, or retry in \(Int(leaseDuration)) seconds if the server it went to stopped")
        }
        let sink: any UploadSink
        do {
            sink = try archives.openUpload(record) { [self] received, multipartID in
                try recordUpload(
                    versionID: id, received: received, multipartID: multipartID, owner: owner, label: record.label)
            }
        } catch {
            if leased { releaseVersionLease(id, state: .awaitingUpload, owner: owner) }
            throw error
        }
        guard offset == sink.received else {
            let received = sink.received
            sink.abandon()  // nothing was appended: nothing is written
            if leased { releaseVersionLease(id, state: .awaitingUpload, owner: owner) }
            throw BacklotError(
                .conflict, "the upload is at byte \(received), not \(offset)", context: record.label,
                hint: "ask for the upload's status and continue from the byte it gives")
        }
        try touchUpload(versionID: id)
        return Upload(
            uploads: self, versionID: id, declared: record.declared, sink: sink, label: record.label,
            leaseOwner: leased ? owner : nil)
    }

    /// Refuses `caller` an upload of the version `row` that another token created, unless it is an admin.
    func requireUploader(_ row: Database.Row, _ caller: Caller?, label: String) throws {
        guard let creator = row["created_by"]?.integer(as: Int.self), let caller, caller.id != creator,
            caller.role != .admin
        else { return }
        let ownerLabel = (try? tokens.token(id: creator))?.label ?? ""
        let owner = ownerLabel.isEmpty ? "token \(creator)" : "token \(creator) (\"\(ownerLabel)\")"
        throw BacklotError(
            .forbidden, "this version's upload belongs to \(owner): only that token or an admin token may upload it",
            context: label,
            hint: "continue the upload with \(owner), or create a new version with this token")
    }

    /// Records an upload's progress in a shared store, renewing its lease.
    /// - Throws: `conflict` when this server no longer holds the upload (its lease ran out and another took it).
    func recordUpload(versionID: Int64, received: UInt64, multipartID: String?, owner: String, label: String) throws {
        let changed = try db.runAlone(
            "UPDATE versions SET received = ?, upload_id = ?, lease_until = ?, upload_activity = ? WHERE id = ? AND lease_owner = ? AND state = 'AWAITING_UPLOAD'",
            [
                .integer(try CheckedInteger.convert(received, to: Int64.self, "the bytes received")),
                multipartID.map { .text($0) } ?? .null,
                .integer(leaseExpiry()), .integer(Repository.now()), .integer(versionID), .text(owner),
            ])
        guard changed == 1 else {
            throw BacklotError(
                .conflict, "this server no longer holds the upload: its lease ran out and another request took it over",
                context: label,
                hint: "ask for the upload's status and continue from the byte it gives")
        }
    }

    /// Records that an upload saw activity now (what ``removeAbandoned(olderThan:now:)`` measures from).
    func touchUpload(versionID: Int64) throws {
        _ = try db.runAlone(
            "UPDATE versions SET upload_activity = ? WHERE id = ? AND state = 'AWAITING_UPLOAD'",
            [.integer(Repository.now()), .integer(versionID)])
    }

    /// Removes versions still AWAITING_UPLOAD whose upload saw no bytes for more than `seconds`,
    /// with their upload data (`backlot serve --abandoned-uploads-after`). An upload another
    /// server holds a lease on is left alone. The versions are gone from the API (their numbers are not reused).
    ///
    /// ```swift
    /// let removed = try repository.uploads.removeAbandoned(olderThan: 7 * 86_400)
    /// ```
    /// - Returns: how many versions were removed.
    /// - Throws: `invalidInput` for a negative or non-finite time; what the database and the archive store throw.
    @discardableResult
    public func removeAbandoned(olderThan seconds: TimeInterval, now: Date = Date()) throws -> Int {
        guard seconds.isFinite, seconds >= 0 else {
            throw BacklotError(
                .invalidInput, "an upload is abandoned after 0 seconds or more, not \(seconds)",
                context: "abandoned-uploads-after")
        }
        let nowSeconds = Int64(now.timeIntervalSince1970.rounded(.down))
        let cutoff: Database.Value = .integer(nowSeconds - Int64(min(seconds, Double(Int64.max / 2)).rounded(.down)))
        let idle =
            "state = 'AWAITING_UPLOAD' AND deleted = 0 AND COALESCE(upload_activity, created) < ? AND (lease_until IS NULL OR lease_until < ?)"
        let leaseNow: Database.Value = .integer(Repository.nowMilliseconds())
        let rows = try db.read { try $0.query("SELECT * FROM versions WHERE \(idle) ORDER BY id", [cutoff, leaseNow]) }
        var removed = 0
        let active = activeUploads.withLock { $0 }
        for row in rows {
            guard let id = row["id"]?.int, !active.contains(id) else { continue }
            let reason = "the upload saw no bytes for more than \(Int(seconds)) seconds and was removed"
            guard
                try db.transaction({ tx in
                    let changed = try tx.run(
                        "UPDATE versions SET deleted = 1, state = 'FAILED', reason = ? WHERE id = ? AND \(idle)",
                        [.text(reason), .integer(id), cutoff, leaseNow])
                    if changed == 1 {
                        try auditVersion(
                            &tx, .versionAbandoned, versionID: id, details: [.reason: reason], system: true)
                    }
                    return changed
                }) == 1
            else { continue }
            let upload = uploadRecord(row)
            try archives.removeUpload(upload)
            if archives.isShared {
                try db.transaction { tx in
                    try tx.run("UPDATE versions SET upload_id = NULL, received = 0 WHERE id = ?", [.integer(id)])
                }
            }
            log("removed the abandoned upload of \(upload.label)")
            removed += 1
        }
        return removed
    }

    /// Marks a fully received upload for processing, once the quota allows it (the version now
    /// counts its declared size).
    /// - Throws: `quotaExceeded` when it would bring the app over its quota: it stays awaiting
    ///   its upload, with every byte, and a later request finishes it.
    func uploadFinished(versionID: Int64) throws {
        let (changed, app) = try db.transaction { tx in
            try requireQuota(&tx, versionID: versionID)
            // The upload's lease ends with it: processing claims its own.
            let changed = try tx.run(
                "UPDATE versions SET state = 'PROCESSING', lease_owner = NULL, lease_until = NULL WHERE id = ? AND state = 'AWAITING_UPLOAD'",
                [.integer(versionID)])
            if changed == 1 { try auditVersion(&tx, .versionUploaded, versionID: versionID) }
            let app =
                try tx.query("SELECT app FROM versions WHERE id = ?", [.integer(versionID)]).first?["app"]?.string ?? ""
            return (changed, app)
        }
        // Only the request that moved it to PROCESSING schedules the processing.
        if changed == 1 { scheduleProcessing(versionID: versionID, app: app) }
    }
}
