import BacklotBasics
import BacklotCatalog
import BacklotCrypto
import BacklotFormat
import BacklotJSON
import BacklotStore
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A version of a pack, as the API reports it.
public struct VersionInfo: Sendable, Hashable {
    public let app: String
    public let pack: String
    public let number: Int
    public let state: VersionState
    public let reason: String?
    public let declaredSize: UInt64
    public let received: UInt64
    public let archiveSHA256: String?
    public let installSize: UInt64?
    public let format: ArchiveFormat

    /// JSON for the API.
    public var json: JSONNode {
        .object([
            "app": .string(app), "pack": .string(pack), "version": .number(number), "state": .string(state.rawValue),
            "reason": reason.map(JSONNode.string) ?? .null, "size": .number(declaredSize),
            "received": .number(received),
            "archiveSHA256": archiveSHA256.map(JSONNode.string) ?? .null,
            "installSize": installSize.map { JSONNode.number($0) } ?? .null,
            "format": .string(format.rawValue),
        ])
    }
}

extension Repository {
    /// Creates the next version of a pack, awaiting an upload of exactly `size` bytes.
    /// - Throws: `notFound`, `quotaExceeded` (saying by how much), `invalidInput` for a bad size.
    /// - Parameters:
    ///   - format: `.pack` (a Backlot pack) or `.appleArchive` (an `.aar`, which needs `manifest`).
    ///   - manifest: the `.aar`'s pack manifest (the JSON given to ba-package); its ID must be `pack`.
    public func createVersion(
        app: String, pack: String, size: UInt64, format: ArchiveFormat = .pack, manifest: JSONNode? = nil
    ) throws -> VersionInfo {
        try openVersion(app: app, pack: pack, size: size, format: format, manifest: manifest).version
    }

    /// Creates the next version of a pack, or — when `archiveSHA256` is given and a version of the
    /// pack with that digest and size exists and is not FAILED — finds that one and creates nothing
    /// (an interrupted upload is resumed from its `received`; a finished one is that version already).
    /// The declared digest is checked once the archive arrived: a mismatch FAILs the version.
    ///
    /// ```swift
    /// let (version, created) = try repository.openVersion(app: "com.example.game", pack: "Levels", size: 5_000, archiveSHA256: digest)
    /// if !created { print("already version \(version.number), \(version.received) bytes received") }
    /// ```
    /// The version records the token that created it (``Caller/current``): only that token, or an
    /// admin token, may upload its archive (``beginUpload(app:pack:number:offset:by:)``).
    /// - Parameter archiveSHA256: the archive's SHA-256, 64 lowercase hex digits.
    /// - Throws: what ``createVersion(app:pack:size:format:manifest:)`` throws; `invalidInput` for a digest that is not 64 lowercase hex digits.
    public func openVersion(
        app: String, pack: String, size: UInt64, format: ArchiveFormat = .pack, manifest: JSONNode? = nil,
        archiveSHA256: String? = nil
    ) throws -> (version: VersionInfo, created: Bool) {
        if let sha = archiveSHA256,
            sha.utf8.count != 64 || !sha.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) })
        {
            throw BacklotError(
                .invalidInput, "the archive's SHA-256 must be 64 lowercase hex digits", context: "archiveSHA256",
                hint: "give the digest as sha256sum prints it")
        }
        var manifestText: String? = nil
        if format == .appleArchive {
            guard let manifest else {
                throw BacklotError(
                    .invalidInput, "an .aar upload needs its manifest JSON (the one given to ba-package)",
                    context: "manifest")
            }
            let text = manifest.serialized()
            let (parsed, _) = try PackManifest.load(Array(text.utf8), source: "manifest")
            guard parsed.assetPackID.rawValue == pack else {
                throw BacklotError(
                    .invalidInput, "the manifest is for the pack \(parsed.assetPackID), not \(pack)",
                    context: "manifest.assetPackID")
            }
            manifestText = PackMetadata(parsed).json.serialized()
        }
        guard size >= UInt64(format == .pack ? PackHeader.size : AppleArchiveHeader.prefixLength), size <= quotaBytes
        else {
            throw BacklotError(
                .invalidInput, "a pack archive of \(size) bytes is impossible", context: "size",
                hint: "declare the archive's exact size in bytes")
        }
        let creator = Caller.current
        let (number, created): (Int, Bool) = try db.transaction { tx in
            try requirePack(&tx, app, pack)
            if let sha = archiveSHA256,
                let same = try tx.query(
                    """
                    SELECT number FROM versions WHERE app = ? AND pack = ? AND deleted = 0 AND state != 'FAILED' AND declared_size = ? AND format = ?
                    AND (declared_sha256 = ? OR archive_sha256 = ?) ORDER BY number DESC LIMIT 1
                    """,
                    [
                        .text(app), .text(pack),
                        .integer(try CheckedInteger.convert(size, to: Int64.self, "the declared size")),
                        .text(format.rawValue),
                        .text(sha), .text(sha),
                    ]
                ).first?["number"]?.integer(as: Int.self)
            {
                return (same, false)
            }
            try requireQuota(&tx, app: app, pack: pack, size: size)
            let last =
                try tx.query(
                    "SELECT MAX(number) AS n FROM versions WHERE app = ? AND pack = ?", [.text(app), .text(pack)]
                ).first?["n"]?.int ?? 0
            let next = try CheckedInteger.add(last, 1, "the next version number", context: "\(app)/\(pack)", code: .io)
            try tx.run(
                """
                INSERT INTO versions(app, pack, number, state, declared_size, created, format, manifest, declared_sha256, upload_activity, created_by)
                VALUES (?, ?, ?, 'AWAITING_UPLOAD', ?, ?, ?, ?, ?, ?, ?)
                """,
                [
                    .text(app), .text(pack), .integer(next),
                    .integer(try CheckedInteger.convert(size, to: Int64.self, "the declared size")),
                    .integer(Self.now()), .text(format.rawValue), manifestText.map { .text($0) } ?? .null,
                    archiveSHA256.map { .text($0) } ?? .null, .integer(Self.now()),
                    creator.map { .integer(Int64($0.id)) } ?? .null,
                ])
            try audit(
                &tx, "version.create", app: app, pack: pack, version: Int(exactly: next),
                details: ["bytes": String(size)])
            return (
                try CheckedInteger.convert(
                    next, to: Int.self, "the version number", context: "\(app)/\(pack)", code: .io), true
            )
        }
        return (try version(app: app, pack: pack, number: number), created)
    }

    /// Apple's quota rule: per pack, the largest retained version; summed over the app's packs.
    /// A version still awaiting its upload counts the bytes stored so far, not the size it
    /// declared: a declaration reserves nothing (else one token could hold an app's whole quota
    /// by declaring it and sending nothing), and the check is made again when the last byte
    /// arrives (``uploadFinished(versionID:)``), where `replacing` is that version at its size.
    func quotaUse(
        _ tx: inout any MetadataConnection, app: String, replacing: (pack: String, size: UInt64)
    ) throws -> UInt64 {
        let rows = try tx.query(
            "SELECT * FROM versions WHERE app = ? AND deleted = 0 AND state != 'FAILED'", [.text(app)])
        var largest: [String: UInt64] = [replacing.pack: replacing.size]
        for row in rows {
            let pack = row["pack"]?.string ?? ""
            let bytes =
                row["state"]?.string == VersionState.awaitingUpload.rawValue
                ? archives.receivedBytes(uploadRecord(row)) : (row["declared_size"]?.integer(as: UInt64.self) ?? 0)
            largest[pack] = max(largest[pack] ?? 0, bytes)
        }
        return try largest.values.reduce(0) { try CheckedInteger.add($0, $1, "the app's quota use", context: app) }
    }

    /// Refuses a version of `size` bytes of `pack` that would bring `app` over its quota. The
    /// app's row is written first, so that checks of one app take turns (two uploads finishing
    /// at once cannot both take the last of the quota).
    /// - Throws: `quotaExceeded`, saying by how much and what to do.
    func requireQuota(
        _ tx: inout any MetadataConnection, app: String, pack: String, size: UInt64, finishing: Bool = false
    ) throws {
        try tx.run("UPDATE apps SET four_eyes = four_eyes WHERE id = ?", [.text(app)])
        let used = try quotaUse(&tx, app: app, replacing: (pack, size))
        guard used > quotaBytes else { return }
        throw BacklotError(
            .quotaExceeded,
            "this version would bring the app to \(used) bytes, \(used - quotaBytes) over its quota of \(quotaBytes)",
            context: "\(app)/\(pack)",
            hint: finishing
                ? "its bytes are kept: delete versions you no longer need (backlot versions delete), then finish the upload (run backlot upload again, or PUT at its last byte with an empty body)"
                : "delete versions you no longer need (backlot versions delete)")
    }

    /// ``requireQuota(_:app:pack:size:finishing:)`` for the upload of a version at its declared size;
    /// nothing for a version no longer awaiting its upload.
    func requireQuota(_ tx: inout any MetadataConnection, versionID: Int64) throws {
        guard
            let row = try tx.query(
                "SELECT app, pack, declared_size FROM versions WHERE id = ? AND state = 'AWAITING_UPLOAD'",
                [.integer(versionID)]
            ).first
        else { return }
        try requireQuota(
            &tx, app: row["app"]?.string ?? "", pack: row["pack"]?.string ?? "",
            size: row["declared_size"]?.integer(as: UInt64.self) ?? 0, finishing: true)
    }

    /// Refuses an upload in progress that can no longer fit in its app's quota (another version
    /// took the room meanwhile), so that it stops early rather than at its last byte.
    /// - Throws: `quotaExceeded`; the bytes received stay.
    func requireQuota(forUpload versionID: Int64) throws {
        try db.transaction { tx in try requireQuota(&tx, versionID: versionID) }
    }

    /// One version. - Throws: `notFound`.
    public func version(app: String, pack: String, number: Int) throws -> VersionInfo {
        let rows = try db.read {
            try $0.query(
                "SELECT * FROM versions WHERE app = ? AND pack = ? AND number = ? AND deleted = 0",
                [.text(app), .text(pack), .integer(Int64(number))])
        }
        guard let row = rows.first else {
            throw BacklotError(.notFound, "no version \(number) of this pack", context: "\(app)/\(pack)")
        }
        return info(row)
    }

    /// All versions of a pack, newest first.
    public func versions(app: String, pack: String) throws -> [VersionInfo] {
        try db.transaction { tx in
            try requirePack(&tx, app, pack)
            return try tx.query(
                "SELECT * FROM versions WHERE app = ? AND pack = ? AND deleted = 0 ORDER BY number DESC",
                [.text(app), .text(pack)])
        }.map(info)
    }

    func info(_ row: Database.Row) -> VersionInfo {
        let state = VersionState(rawValue: row["state"]?.string ?? "") ?? .failed
        let received: UInt64
        if state == .awaitingUpload {
            received = archives.receivedBytes(uploadRecord(row))
        } else {
            received = state == .failed ? 0 : (row["declared_size"]?.integer(as: UInt64.self) ?? 0)
        }
        return VersionInfo(
            app: row["app"]?.string ?? "", pack: row["pack"]?.string ?? "",
            number: (row["number"]?.integer(as: Int.self) ?? 0), state: state,
            reason: row["reason"]?.string, declaredSize: (row["declared_size"]?.integer(as: UInt64.self) ?? 0),
            received: received,
            archiveSHA256: row["archive_sha256"]?.string, installSize: row["install_size"]?.integer(as: UInt64.self),
            format: ArchiveFormat(rawValue: row["format"]?.string ?? "pack") ?? .pack)
    }

    /// What the archive store needs to know of a version's upload.
    func uploadRecord(_ row: Database.Row) -> UploadRecord {
        UploadRecord(
            versionID: row["id"]?.int ?? 0, declared: row["declared_size"]?.integer(as: UInt64.self) ?? 0,
            recorded: row["received"]?.integer(as: UInt64.self) ?? 0, multipartID: row["upload_id"]?.string,
            label: "\(row["app"]?.string ?? "")/\(row["pack"]?.string ?? "")/\(row["number"]?.int ?? 0)")
    }

    func versionRow(app: String, pack: String, number: Int) throws -> Database.Row {
        let rows = try db.read {
            try $0.query(
                "SELECT * FROM versions WHERE app = ? AND pack = ? AND number = ? AND deleted = 0",
                [.text(app), .text(pack), .integer(Int64(number))])
        }
        guard let row = rows.first else {
            throw BacklotError(.notFound, "no version \(number) of this pack", context: "\(app)/\(pack)")
        }
        return row
    }

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
            repository: self, versionID: id, declared: record.declared, sink: sink, label: record.label,
            leaseOwner: leased ? owner : nil)
    }

    /// Refuses `caller` an upload of the version `row` that another token created, unless it is an admin.
    func requireUploader(_ row: Database.Row, _ caller: Caller?, label: String) throws {
        guard let creator = row["created_by"]?.integer(as: Int.self), let caller, caller.id != creator,
            caller.role != .admin
        else { return }
        let ownerLabel = (try? token(id: creator))?.label ?? ""
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
                .integer(leaseExpiry()), .integer(Self.now()), .integer(versionID), .text(owner),
            ])
        guard changed == 1 else {
            throw BacklotError(
                .conflict, "this server no longer holds the upload: its lease ran out and another request took it over",
                context: label,
                hint: "ask for the upload's status and continue from the byte it gives")
        }
    }

    /// Records that an upload saw activity now (what ``removeAbandonedUploads(olderThan:now:)`` measures from).
    func touchUpload(versionID: Int64) throws {
        _ = try db.runAlone(
            "UPDATE versions SET upload_activity = ? WHERE id = ? AND state = 'AWAITING_UPLOAD'",
            [.integer(Self.now()), .integer(versionID)])
    }

    /// Removes versions still AWAITING_UPLOAD whose upload saw no bytes for more than `seconds`,
    /// with their upload data (`backlot serve --abandoned-uploads-after`). An upload another
    /// server holds a lease on is left alone. The versions are gone from the API (their numbers are not reused).
    ///
    /// ```swift
    /// let removed = try repository.removeAbandonedUploads(olderThan: 7 * 86_400)
    /// ```
    /// - Returns: how many versions were removed.
    /// - Throws: `invalidInput` for a negative or non-finite time; what the database and the archive store throw.
    @discardableResult
    public func removeAbandonedUploads(olderThan seconds: TimeInterval, now: Date = Date()) throws -> Int {
        guard seconds.isFinite, seconds >= 0 else {
            throw BacklotError(
                .invalidInput, "an upload is abandoned after 0 seconds or more, not \(seconds)",
                context: "abandoned-uploads-after")
        }
        let nowSeconds = Int64(now.timeIntervalSince1970.rounded(.down))
        let cutoff: Database.Value = .integer(nowSeconds - Int64(min(seconds, Double(Int64.max / 2)).rounded(.down)))
        let idle =
            "state = 'AWAITING_UPLOAD' AND deleted = 0 AND COALESCE(upload_activity, created) < ? AND (lease_until IS NULL OR lease_until < ?)"
        let leaseNow: Database.Value = .integer(Self.nowMilliseconds())
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
                            &tx, "version.abandoned", versionID: id, details: ["reason": reason], system: true)
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
            if changed == 1 { try auditVersion(&tx, "version.uploaded", versionID: versionID) }
            let app =
                try tx.query("SELECT app FROM versions WHERE id = ?", [.integer(versionID)]).first?["app"]?.string ?? ""
            return (changed, app)
        }
        // Only the request that moved it to PROCESSING schedules the processing.
        if changed == 1 { scheduleProcessing(versionID: versionID, app: app) }
    }

    /// Waits until queued processing is done (for tests and the CLI's synchronous paths).
    public func waitForProcessing() { scheduler.waitUntilIdle() }

    /// Stops processing for good, before the server exits: queued versions are left queued in the
    /// database, a running one stops at its next chunk and is left `PROCESSING` without an owner,
    /// so that the next start, or another server sharing the database, takes each up again.
    /// Returns when no processing runs.
    public func stopProcessing() { scheduler.stop() }

    /// Observes processing outcomes (for metrics).
    public func onProcessed(_ observer: @escaping @Sendable (String) -> Void) {
        processingObserver.withLock { $0 = observer }
    }

    /// Queues a version's processing behind its app's other uploads; apps take turns. The job
    /// first claims the version's lease: when another server holds it, this one leaves it alone;
    /// while processing, the lease is renewed, and a lease lost (this server was too slow to
    /// renew it and another took over) stops the processing without touching the version, as
    /// ``stopProcessing()`` does.
    func scheduleProcessing(versionID: Int64, app: String) {
        scheduler.schedule(versionID: versionID, app: app) { [self] flag in
            let started = ContinuousClock.now
            guard (try? claimVersion(versionID, state: .processing)) == true else { return }
            let renewal = RepeatingTimer(label: "backlot.processing-lease", every: max(0.2, leaseDuration / 3)) {
                [self] in
                if (try? renewVersionLease(versionID)) == false { flag.set() }
            }
            defer {
                renewal.cancelAndWait()  // no renewal after the release, nor while the process exits
                releaseVersionLease(versionID, state: nil)
            }
            let outcome: String
            do {
                try process(versionID: versionID, isCancelled: { flag.isSet })
                outcome = "complete"
            } catch let error as BacklotError where error.code == .cancelled && scheduler.isStopping {
                outcome = "interrupted"
                log(
                    "processing of \(app) version row \(versionID) stopped with the server: the next start (or another server) takes it up again"
                )
            } catch {
                let cancelled = (error as? BacklotError)?.code == .cancelled
                let reason = Self.clientReason(for: error)
                let row = try? db.transaction { tx -> Database.Row? in
                    guard
                        try tx.run(
                            "UPDATE versions SET state = 'FAILED', reason = ? WHERE id = ? AND state = 'PROCESSING' AND lease_owner = ?",
                            [.text(reason), .integer(versionID), .text(instanceID)]) == 1
                    else { return nil }
                    try auditVersion(
                        &tx, "version.failed", versionID: versionID, details: ["error": reason], system: true)
                    return try tx.query("SELECT * FROM versions WHERE id = ?", [.integer(versionID)]).first
                }
                if let row = row ?? nil { try? archives.removeUpload(uploadRecord(row)) }
                outcome = cancelled ? "cancelled" : "failed"
                // The full error, with any server path, goes to the server's log only.
                log("processing of \(app) version row \(versionID) \(outcome): \(error)")
            }
            processingTimeObserver.withLock { $0 }?(outcome, Self.seconds(started.duration(to: .now)))
            let observer = processingObserver.withLock { $0 }
            observer?(outcome)
        }
    }

    /// What API clients are shown of a processing failure: what is wrong with the archive (named
    /// "the archive", never by a server path), or that the server failed (its log has the details).
    static func clientReason(for error: any Error) -> String {
        guard let e = error as? BacklotError, e.code == .corruptArchive || e.code == .cancelled || e.code.isInvalidInput
        else {
            return "the server could not process the archive (an internal error; the server's log has the details)"
        }
        var text = e.context.map { "\($0): \(e.message)" } ?? e.message
        if let hint = e.hint { text += " (\(hint))" }
        return withoutPaths(text)
    }

    /// Replaces every absolute path (a word starting with "/") with "[path]"; paths inside a pack are relative.
    static func withoutPaths(_ text: String) -> String {
        var out = ""
        var inPath = false
        var previous: Character = " "
        for c in text {
            if inPath {
                if c == " " || c == "\"" || c == "'" || c == "," || c == ")" || c == ":" || c == "\n" {
                    inPath = false
                    out.append(c)
                }
            } else if c == "/"
                && (previous == " " || previous == "(" || previous == "\"" || previous == "'" || previous == "\n")
            {
                inPath = true
                out += "[path]"
            } else {
                out.append(c)
            }
            previous = c
        }
        return out
    }

    /// Verifies the archive fully (read back from the archive store: a bucket's object by
    /// ranges), checks its pack ID, records sizes and stores it as a blob.
    func process(versionID: Int64, isCancelled: @escaping () -> Bool = { false }) throws {
        let rows = try db.read { try $0.query("SELECT * FROM versions WHERE id = ?", [.integer(versionID)]) }
        guard let row = rows.first, let pack = row["pack"]?.string,
            row["state"]?.string == VersionState.processing.rawValue
        else { return }
        guard row["deleted"]?.int == 0 else {
            throw BacklotError(.cancelled, "processing was cancelled: the version was deleted")
        }
        let declared = row["declared_size"]?.integer(as: UInt64.self) ?? 0
        let upload = uploadRecord(row)
        // The upload, or — when a crash came between storing it as a blob and recording that — the blob.
        var stored = false
        var reader = try archives.readUpload(upload)
        if reader == nil, let sha = row["archive_sha256"]?.string {
            reader = try archives.readBlob(sha)
            stored = reader != nil
        }
        guard let reader else { throw BacklotError(.invalidInput, "the uploaded archive is missing") }
        defer { reader.close() }
        guard reader.size == declared else {
            throw BacklotError(.invalidInput, "the archive has \(reader.size) bytes, not the \(declared) declared")
        }
        let sha = try reader.sha256()
        if let declaredSHA = row["declared_sha256"]?.string, declaredSHA != sha.hex {
            throw BacklotError(
                .invalidInput, "the archive's SHA-256 is \(sha.hex), not the \(declaredSHA) declared",
                hint: "upload the archive whose digest was declared, as a new version")
        }
        if row["format"]?.string == ArchiveFormat.appleArchive.rawValue {
            try processAppleArchive(
                versionID: versionID, upload: upload, reader: reader, stored: stored,
                manifest: row["manifest"]?.string ?? "", sha: sha)
            return
        }
        let checked = try UploadedPackCheck.run(
            reader: reader, maximumInstallSize: maximumInstallSize, isCancelled: isCancelled)
        log(
            "processed \(row["app"]?.string ?? "")/\(pack) version \(row["number"]?.int ?? 0): \(checked.index.chunks.count) distinct chunks, "
                + "\(checked.decompressions) decompressions, \(checked.hashedFileBytes) file bytes hashed, install size \(checked.installSize)"
        )
        guard checked.index.metadata.assetPackID.rawValue == pack else {
            throw BacklotError(
                .invalidInput, "the archive is the pack \(checked.index.metadata.assetPackID), not \(pack)",
                hint: "upload it to the pack named in its manifest")
        }
        TestStopPoint.reach("processing.beforeStore")
        if !stored { try storeBlob(versionID: versionID, upload: upload, sha: sha) }
        let metadata = checked.index.metadata.json.serialized()
        let installSize = try CheckedInteger.convert(
            checked.installSize, to: Int64.self, "the install size", context: UploadedPackCheck.source)
        let indexLength = try CheckedInteger.convert(
            checked.header.indexLength, to: Int64.self, "the index length", context: UploadedPackCheck.source)
        let indexOffset = try CheckedInteger.convert(
            checked.header.indexOffset, to: Int64.self, "the index offset", context: UploadedPackCheck.source)
        // Deltas from earlier versions are published before the version can be released (Repository+Deltas.swift).
        buildDeltas(app: row["app"]?.string ?? "", pack: pack, number: row["number"]?.int ?? 0, archive: sha.hex)
        try db.transaction { tx in
            let changed = try tx.run(
                """
                UPDATE versions SET state = 'COMPLETE', reason = NULL, archive_sha256 = ?, index_offset = ?, index_length = ?, index_sha256 = ?,
                install_size = ?, metadata = ? WHERE id = ? AND state = 'PROCESSING' AND lease_owner = ?
                """,
                [
                    .text(sha.hex), .integer(indexOffset), .integer(indexLength),
                    .text(checked.header.indexDigest.hex), .integer(installSize), .text(metadata), .integer(versionID),
                    .text(instanceID),
                ])
            if changed == 1 {
                try auditVersion(
                    &tx, "version.processed", versionID: versionID, details: ["sha256": sha.hex], system: true)
            }
        }
    }

    /// An `.aar` is stored as is: its header is checked (it cannot be decompressed here: LZFSE has
    /// no Debian library), its size must be the declared one, and its manifest was checked at creation.
    func processAppleArchive(
        versionID: Int64, upload: UploadRecord, reader: any ArchiveReader, stored: Bool, manifest: String,
        sha: SHA256Digest
    ) throws {
        let head = try reader.read(count: Int(min(UInt64(AppleArchiveHeader.prefixLength), reader.size)), at: 0)
        _ = try AppleArchiveHeader.check(head, fileSize: reader.size, source: "the uploaded archive")
        if !stored { try storeBlob(versionID: versionID, upload: upload, sha: sha) }
        try db.transaction { tx in
            let changed = try tx.run(
                "UPDATE versions SET state = 'COMPLETE', reason = NULL, archive_sha256 = ?, metadata = ? WHERE id = ? AND state = 'PROCESSING' AND lease_owner = ?",
                [.text(sha.hex), .text(manifest), .integer(versionID), .text(instanceID)])
            if changed == 1 {
                try auditVersion(
                    &tx, "version.processed", versionID: versionID, details: ["sha256": sha.hex], system: true)
            }
        }
    }

    /// Stores a verified upload as the blob `sha`, recording the SHA-256 first, so that a crash in
    /// between leaves a version that processing can finish from the blob. Runs under the blob
    /// lock, like garbage collection (which also lists blobs before it reads which are live), so a
    /// new blob is never collected.
    func storeBlob(versionID: Int64, upload: UploadRecord, sha: SHA256Digest) throws {
        try blobLock.withLock { _ in
            try db.transaction { tx in
                try tx.run(
                    "UPDATE versions SET archive_sha256 = ? WHERE id = ?", [.text(sha.hex), .integer(versionID)])
            }
            try archives.storeBlob(from: upload, sha: sha)
        }
    }

    /// Deletes a version that no channel uses; its blob goes at the next garbage collection. A
    /// version being processed stops processing (the deletion does not wait for it).
    public func deleteVersion(app: String, pack: String, number: Int) throws {
        let id: Int64? = try db.transaction { tx in
            let used = try tx.query(
                "SELECT channel FROM channel_packs WHERE app = ? AND pack = ? AND (live = ? OR candidate = ?)",
                [.text(app), .text(pack), .integer(Int64(number)), .integer(Int64(number))])
            if let channel = used.first?["channel"]?.string {
                throw BacklotError(
                    .conflict, "the version is released on \(channel)", context: "\(app)/\(pack)/\(number)",
                    hint: "roll the channel back to another version or withdraw the pack first")
            }
            let id = try tx.query(
                "SELECT id FROM versions WHERE app = ? AND pack = ? AND number = ? AND deleted = 0",
                [.text(app), .text(pack), .integer(Int64(number))]
            ).first?["id"]?.int
            // A version being processed is FAILED at once; its processing is stopped below.
            guard
                try tx.run(
                    """
                    UPDATE versions SET deleted = 1,
                        reason = CASE WHEN state = 'PROCESSING' THEN 'deleted while it was being processed' ELSE reason END,
                        state = CASE WHEN state = 'PROCESSING' THEN 'FAILED' ELSE state END
                    WHERE app = ? AND pack = ? AND number = ? AND deleted = 0
                    """,
                    [.text(app), .text(pack), .integer(Int64(number))]) == 1
            else {
                throw BacklotError(.notFound, "no version \(number) of this pack", context: "\(app)/\(pack)")
            }
            try audit(&tx, "version.delete", app: app, pack: pack, version: number)
            return id
        }
        if let id { scheduler.cancel(versionID: id) }
        try collectGarbage()
    }

    /// Removes blobs and published archives that no retained version references. Runs under the
    /// blob lock, so that a blob being stored is never taken for garbage (and never waits for processing).
    public func collectGarbage() throws {
        try blobLock.withLock { _ in try collectGarbageNow() }
    }

    private func collectGarbageNow() throws {
        // Listed before the live set is read: a blob stored meanwhile (by any server) had its
        // SHA-256 recorded before it was stored, so it is either not listed here or live below.
        let blobs = try archives.blobNames()
        let packs = try tree.fileNames(in: PublishedTreeLayout.packsFolder).compactMap {
            PublishedTreeLayout(path: PublishedTreeLayout.packsFolder + "/" + $0)?.contentAddress
        }
        let live = Set(
            try db.read {
                try $0.query("SELECT archive_sha256 FROM versions WHERE deleted = 0 AND archive_sha256 IS NOT NULL")
            }
            .compactMap { $0["archive_sha256"]?.string })
        for sha in blobs where !live.contains(sha) { try archives.removeBlob(sha) }
        for sha in packs where !live.contains(sha) { try tree.remove(PublishedTreeLayout.pack(sha256: sha).path) }
        // Uploads of deleted and failed versions. In a bucket, each is cleaned once (its row then says nothing is left).
        let dead = "((deleted = 1 AND state != 'PROCESSING') OR state = 'FAILED')"
        let rows = try db.read {
            try $0.query(
                "SELECT * FROM versions WHERE \(dead)"
                    + (archives.isShared ? " AND (upload_id IS NOT NULL OR received > 0)" : ""))
        }
        for row in rows {
            let upload = uploadRecord(row)
            try archives.removeUpload(upload)
            if archives.isShared {
                try db.transaction { tx in
                    try tx.run(
                        "UPDATE versions SET upload_id = NULL, received = 0 WHERE id = ? AND \(dead)",
                        [.integer(upload.versionID)])
                }
            }
        }
    }
}

/// An upload in progress: bytes are appended at the end, never past the declared size.
// Safe because: an upload belongs to one request; libmicrohttpd calls a connection's handler on one thread at a
// time, and the worker that ends it runs while the connection is suspended (suspend and resume order the accesses,
// as for `RequestState`); its shared effects go through `Repository`'s `Mutex`es and the database.
public final class Upload: @unchecked Sendable {
    let repository: Repository
    let versionID: Int64
    public let declared: UInt64
    public var received: UInt64 { sink.received }
    let sink: any UploadSink
    let label: String
    /// Who holds the upload's lease in the metadata (a shared store), nil when it is not leased;
    /// and when the lease was last renewed.
    let leaseOwner: String?
    private var renewed = ContinuousClock.now
    /// When the upload's activity was last recorded (``Repository/removeAbandonedUploads(olderThan:now:)`` reads it).
    private var touched = ContinuousClock.now
    private var closed = false
    /// This request's close moved the version to processing.
    private var completed = false

    init(
        repository: Repository, versionID: Int64, declared: UInt64, sink: any UploadSink, label: String,
        leaseOwner: String?
    ) {
        self.repository = repository
        self.versionID = versionID
        self.declared = declared
        self.sink = sink
        self.label = label
        self.leaseOwner = leaseOwner
        _ = repository.activeUploads.withLock { $0.insert(versionID) }
    }

    /// Appends bytes. - Throws: `quotaExceeded` past the declared size (nothing past it is written),
    ///   or when the app's quota can no longer hold the version (checked every 30 s; what arrived
    ///   stays); `conflict` when the upload's lease was lost to another request.
    public func append(_ bytes: UnsafeRawBufferPointer) throws {
        guard received + UInt64(bytes.count) <= declared else {
            throw BacklotError(
                .quotaExceeded, "the upload is larger than the \(declared) bytes declared", context: label,
                hint: "create a version with the archive's exact size")
        }
        if let leaseOwner, ContinuousClock.now - renewed > .seconds(repository.leaseDuration / 3) {
            guard try repository.renewVersionLease(versionID, owner: leaseOwner) else {
                throw BacklotError(
                    .conflict,
                    "this server no longer holds the upload: its lease ran out and another request took it over",
                    context: label)
            }
            renewed = .now
        }
        try sink.append(bytes)
        if ContinuousClock.now - touched > .seconds(30) {
            try? repository.touchUpload(versionID: versionID)
            touched = .now
            try repository.requireQuota(forUpload: versionID)
        }
    }

    /// Ends this request's part of the upload, making what arrived durable; when everything
    /// arrived, processing starts — unless `completing` is false (the caller's token was revoked
    /// meanwhile): the bytes stay, the version stays `AWAITING_UPLOAD`, and a request of a token
    /// that may upload it finishes it (a `PUT` at the last byte, with an empty body).
    /// - Returns: whether the upload is complete (always false without `completing`).
    /// - Throws: `quotaExceeded` when the complete version would bring its app over its quota
    ///   (every byte stays; finishing it again once room was made starts processing).
    @discardableResult
    public func close(completing: Bool = true) throws -> Bool {
        guard !closed else { return completed }
        closed = true
        _ = repository.activeUploads.withLock { $0.remove(versionID) }
        defer {
            if let leaseOwner { repository.releaseVersionLease(versionID, state: .awaitingUpload, owner: leaseOwner) }
        }
        let received = try sink.finish()
        try? repository.touchUpload(versionID: versionID)
        guard completing, received == declared else { return false }
        try repository.uploadFinished(versionID: versionID)
        completed = true
        return true
    }

    deinit {
        if !closed {
            _ = repository.activeUploads.withLock { $0.remove(versionID) }
            sink.abandon()
            if let leaseOwner { repository.releaseVersionLease(versionID, state: .awaitingUpload, owner: leaseOwner) }
        }
    }
}
