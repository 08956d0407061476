import BacklotAppleArchive
import BacklotBasics
import BacklotCrypto
import BacklotFormat
import BacklotProtocol
import BacklotStore
import Foundation

/// Processing: an uploaded archive verified fully, stored by SHA-256, its deltas made, the version
/// COMPLETE or FAILED; fair between apps, leased to one server, taken over when a server died.
extension Uploads {
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

    /// Observes each processing's outcome (`complete`, `failed`, `cancelled`) and the seconds it took.
    public func onProcessingTime(_ observer: @escaping @Sendable (String, Double) -> Void) {
        processingTimeObserver.withLock { $0 = observer }
    }

    /// Schedules the processing of every uploaded version that nobody processes: no lease, or a
    /// lease that ran out (its server died). Each job claims its version first, so a version is
    /// processed by one server however many look at once.
    /// - Returns: how many versions were scheduled.
    @discardableResult
    public func takeOverAbandonedProcessing() throws -> Int {
        let rows = try db.read {
            try $0.query(
                """
                SELECT id, app FROM versions WHERE state = 'PROCESSING' AND deleted = 0 AND (lease_owner IS NULL OR lease_until < ?) ORDER BY id
                """, [.integer(Repository.nowMilliseconds())])
        }
        var scheduled = 0
        for row in rows {
            guard let id = row["id"]?.int, let app = row["app"]?.string else { continue }
            scheduleProcessing(versionID: id, app: app)
            scheduled += 1
        }
        return scheduled
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
                        &tx, .versionFailed, versionID: versionID, details: [.error: reason], system: true)
                    return try tx.query("SELECT * FROM versions WHERE id = ?", [.integer(versionID)]).first
                }
                if let row = row ?? nil { try? archives.removeUpload(uploadRecord(row)) }
                outcome = cancelled ? "cancelled" : "failed"
                // The full error, with any server path, goes to the server's log only.
                log("processing of \(app) version row \(versionID) \(outcome): \(error)")
            }
            processingTimeObserver.withLock { $0 }?(outcome, started.duration(to: .now).inSeconds)
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
    func process(versionID: Int64, isCancelled: @escaping @Sendable () -> Bool = { false }) throws {
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
        let declaredSHA = row["declared_sha256"]?.string
        /// An archive that is not the one declared is refused as such, whatever else is wrong with it.
        func checkDeclared(_ sha: SHA256Digest) throws {
            if let declaredSHA, declaredSHA != sha.hex {
                throw BacklotError(
                    .invalidInput, "the archive's SHA-256 is \(sha.hex), not the \(declaredSHA) declared",
                    hint: "upload the archive whose digest was declared, as a new version")
            }
        }
        if row["format"]?.string == ArchiveFormat.appleArchive.rawValue {
            let sha = try reader.sha256(isCancelled: isCancelled)
            try checkDeclared(sha)
            try processAppleArchive(
                versionID: versionID, upload: upload, reader: reader, stored: stored,
                manifest: row["manifest"]?.string ?? "", sha: sha)
            return
        }
        // The upload, or the blob it was stored as (then its digest is recorded), opened again:
        // the archive's digest, and each delta build, read it with a reader of their own.
        let recordedSHA = stored ? row["archive_sha256"]?.string : nil
        let open: @Sendable () throws -> any ArchiveReader = { [archives] in
            if let upload = try archives.readUpload(upload) { return upload }
            if let recordedSHA, let blob = try archives.readBlob(recordedSHA) { return blob }
            throw BacklotError(.io, "the uploaded archive is neither an upload nor a blob of the archive store")
        }
        // The archive's SHA-256 is made on a thread of its own while the chunks are checked.
        let digest = ArchiveDigestTask(open: open)
        // The deltas from earlier versions are built while the archive is checked (the check and
        // the builds share the cores), each build reading it with a reader of its own; they are
        // published only once the check has passed, and stopped when it fails.
        let deltas = publication.startDeltas(
            app: row["app"]?.string ?? "", pack: pack, number: row["number"]?.int ?? 0, archive: recordedSHA,
            open: open)
        let checked: UploadedPackCheck.Outcome
        let sha: SHA256Digest
        do {
            do {
                checked = try UploadedPackCheck.run(
                    reader: reader, open: open, threads: min(ProcessInfo.processInfo.activeProcessorCount, 8),
                    maximumInstallSize: maximumInstallSize, isCancelled: isCancelled)
                guard checked.index.metadata.assetPackID.rawValue == pack else {
                    throw BacklotError(
                        .invalidInput, "the archive is the pack \(checked.index.metadata.assetPackID), not \(pack)",
                        hint: "upload it to the pack named in its manifest")
                }
            } catch {
                // Said first when the archive is not the one declared (as when the digest was
                // made before the check); otherwise the digest is not waited for. The deltas
                // are stopped first: whichever is said, they are not published.
                deltas?.cancel()
                if declaredSHA != nil, !isCancelled(), let made = try? digest.wait() { try checkDeclared(made) }
                digest.cancel()
                throw error
            }
            sha = try digest.wait()
            try checkDeclared(sha)
        } catch {
            deltas?.cancel()
            _ = deltas?.wait()
            throw error
        }
        log(
            "processed \(row["app"]?.string ?? "")/\(pack) version \(row["number"]?.int ?? 0): \(checked.index.chunks.count) distinct chunks, "
                + "\(checked.decompressions) decompressions, \(checked.hashedFileBytes) file bytes hashed, install size \(checked.installSize)"
        )
        TestStopPoint.reach("processing.beforeStore")
        // Every build has read the upload before it is stored as a blob (which may move or copy it).
        _ = deltas?.wait()
        if !stored { try storeBlob(versionID: versionID, upload: upload, sha: sha) }
        let metadata = checked.index.metadata.json.serialized()
        let installSize = try CheckedInteger.convert(
            checked.installSize, to: Int64.self, "the install size", context: UploadedPackCheck.source)
        let indexLength = try CheckedInteger.convert(
            checked.header.indexLength, to: Int64.self, "the index length", context: UploadedPackCheck.source)
        let indexOffset = try CheckedInteger.convert(
            checked.header.indexOffset, to: Int64.self, "the index offset", context: UploadedPackCheck.source)
        // Deltas from earlier versions are published before the version can be released
        // (Publication+Deltas.swift), under the blob lock: this process's garbage collection,
        // which collects the deltas of versions no longer kept, never runs while they are
        // written. The version claims its pack digest there first (it is recorded as its own only
        // once it is COMPLETE, below), whether or not it made deltas: the deltas already listed
        // into its bytes, which its release will name, are kept from then on.
        try blobLock.withLock { _ in
            try db.transaction {
                try Uploads.claimPackDigest(
                    &$0, app: row["app"]?.string ?? "", pack: pack, number: Int64(row["number"]?.int ?? 0),
                    digest: checked.header.indexDigest.hex)
            }
            publication.publishDeltas(deltas)
        }
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
                    &tx, .versionProcessed, versionID: versionID, details: [.sha256: sha.hex], system: true)
            }
        }
    }

    /// An `.aar` is stored as is, once read completely (every block and entry, docs/format.md §13),
    /// refused as soon as its files pass the install-size limit, and checked against its manifest.
    func processAppleArchive(
        versionID: Int64, upload: UploadRecord, reader: any ArchiveReader, stored: Bool, manifest: String,
        sha: SHA256Digest
    ) throws {
        let head = try reader.read(count: Int(min(UInt64(AppleArchiveHeader.prefixLength), reader.size)), at: 0)
        _ = try AppleArchiveHeader.check(head, fileSize: reader.size, source: "the uploaded archive")
        // Every block decompressed and every entry read and checked (docs/format.md §13), before
        // the archive is offered to any device; then its entries against the manifest's selectors.
        let summary = try AppleArchiveReader(UploadedArchive(reader: reader), name: "the uploaded archive").readAll(
            maximumInstallSize: maximumInstallSize
        ) { _ in nil }
        // Versions uploaded before the selectors were kept have none to compare.
        if let selectors = try UploadManifest.selectorsManifest(manifest, source: "the version's manifest") {
            try summary.check(against: selectors, source: "the uploaded archive")
        }
        guard summary.installSize <= maximumInstallSize else {
            throw BacklotError(
                .invalidInput,
                "the archive's files add up to \(summary.installSize) bytes, more than this server's install-size limit of \(maximumInstallSize) bytes",
                hint: "the server's operator can raise the limit: backlot serve --max-install-size BYTES")
        }
        let installSize = try CheckedInteger.convert(
            summary.installSize, to: Int64.self, "the install size", context: "the uploaded archive")
        log(
            "processed an Apple Archive (\(summary.compression), \(summary.blocks) blocks): \(summary.files) files, install size \(summary.installSize)"
        )
        if !stored { try storeBlob(versionID: versionID, upload: upload, sha: sha) }
        try db.transaction { tx in
            let changed = try tx.run(
                "UPDATE versions SET state = 'COMPLETE', reason = NULL, archive_sha256 = ?, install_size = ?, metadata = ? WHERE id = ? AND state = 'PROCESSING' AND lease_owner = ?",
                [.text(sha.hex), .integer(installSize), .text(manifest), .integer(versionID), .text(instanceID)])
            if changed == 1 {
                try auditVersion(
                    &tx, .versionProcessed, versionID: versionID, details: [.sha256: sha.hex], system: true)
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
}

/// An upload as the Apple Archive reader reads it.
struct UploadedArchive: AppleArchiveSource {
    let reader: any ArchiveReader
    var size: UInt64 { reader.size }
    func read(count: Int, at offset: UInt64) throws -> [UInt8] { try reader.read(count: count, at: offset) }
}
