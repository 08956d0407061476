import BacklotBasics
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
            "reason": reason.map(JSONNode.string) ?? .null, "size": .number(declaredSize), "received": .number(received),
            "archiveSHA256": archiveSHA256.map(JSONNode.string) ?? .null, "installSize": installSize.map { JSONNode.number($0) } ?? .null,
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
    public func createVersion(app: String, pack: String, size: UInt64, format: ArchiveFormat = .pack, manifest: JSONNode? = nil) throws -> VersionInfo {
        var manifestText: String? = nil
        if format == .appleArchive {
            guard let manifest else {
                throw BacklotError(.invalidInput, "an .aar upload needs its manifest JSON (the one given to ba-package)", context: "manifest")
            }
            let text = manifest.serialized()
            let (parsed, _) = try AssetPackManifest.load(Array(text.utf8), source: "manifest")
            guard parsed.assetPackID.rawValue == pack else {
                throw BacklotError(.invalidInput, "the manifest is for the pack \(parsed.assetPackID), not \(pack)", context: "manifest.assetPackID")
            }
            manifestText = PackMetadata(parsed).json.serialized()
        }
        guard size >= UInt64(format == .pack ? PackHeader.size : AppleArchiveHeader.prefixLength), size <= quotaBytes else {
            throw BacklotError(.invalidInput, "a pack archive of \(size) bytes is impossible", context: "size",
                               hint: "declare the archive's exact size in bytes")
        }
        let number: Int = try db.transaction { tx in
            try requirePack(&tx, app, pack)
            let used = try quotaUse(&tx, app: app, replacing: (pack, size))
            guard used <= quotaBytes else {
                throw BacklotError(.quotaExceeded, "this version would bring \(app) to \(used) bytes, \(used - quotaBytes) over its quota of \(quotaBytes)",
                                   context: "\(app)/\(pack)", hint: "delete versions you no longer need (backlot versions delete)")
            }
            let last = try tx.query("SELECT MAX(number) AS n FROM versions WHERE app = ? AND pack = ?", [.text(app), .text(pack)]).first?["n"]?.int ?? 0
            let next = try CheckedInteger.add(last, 1, "the next version number", context: "\(app)/\(pack)", code: .io)
            try tx.run("INSERT INTO versions(app, pack, number, state, declared_size, created, format, manifest) VALUES (?, ?, ?, 'AWAITING_UPLOAD', ?, ?, ?, ?)",
                       [.text(app), .text(pack), .integer(next), .integer(try CheckedInteger.convert(size, to: Int64.self, "the declared size")),
                        .integer(Self.now()), .text(format.rawValue),
                        manifestText.map { .text($0) } ?? .null])
            return try CheckedInteger.convert(next, to: Int.self, "the version number", context: "\(app)/\(pack)", code: .io)
        }
        return try version(app: app, pack: pack, number: number)
    }

    /// Apple's quota rule: per pack, the largest retained version; summed over the app's packs.
    func quotaUse(_ tx: inout any MetadataConnection, app: String, replacing: (pack: String, size: UInt64)) throws -> UInt64 {
        let rows = try tx.query("""
            SELECT pack, MAX(declared_size) AS m FROM versions
            WHERE app = ? AND deleted = 0 AND state != 'FAILED' GROUP BY pack
            """, [.text(app)])
        var total: UInt64 = 0
        var sawPack = false
        for r in rows {
            var m = r["m"]?.integer(as: UInt64.self) ?? 0
            if r["pack"]?.string == replacing.pack { m = max(m, replacing.size); sawPack = true }
            total = try CheckedInteger.add(total, m, "the app's quota use", context: app)
        }
        return sawPack ? total : try CheckedInteger.add(total, replacing.size, "the app's quota use", context: app)
    }

    /// One version. - Throws: `notFound`.
    public func version(app: String, pack: String, number: Int) throws -> VersionInfo {
        let rows = try db.read { try $0.query("SELECT * FROM versions WHERE app = ? AND pack = ? AND number = ? AND deleted = 0",
                                              [.text(app), .text(pack), .integer(Int64(number))]) }
        guard let row = rows.first else {
            throw BacklotError(.notFound, "no version \(number) of \(app)/\(pack)", context: "\(app)/\(pack)/\(number)")
        }
        return info(row)
    }

    /// All versions of a pack, newest first.
    public func versions(app: String, pack: String) throws -> [VersionInfo] {
        try db.transaction { tx in
            try requirePack(&tx, app, pack)
            return try tx.query("SELECT * FROM versions WHERE app = ? AND pack = ? AND deleted = 0 ORDER BY number DESC", [.text(app), .text(pack)])
        }.map(info)
    }

    func info(_ row: Database.Row) -> VersionInfo {
        let id = row["id"]?.int ?? 0
        let state = VersionState(rawValue: row["state"]?.string ?? "") ?? .failed
        let received: UInt64
        if state == .awaitingUpload {
            received = (try? FileSystem.status(uploadPath(id)))??.size ?? 0
        } else {
            received = state == .failed ? 0 : (row["declared_size"]?.integer(as: UInt64.self) ?? 0)
        }
        return VersionInfo(app: row["app"]?.string ?? "", pack: row["pack"]?.string ?? "", number: (row["number"]?.integer(as: Int.self) ?? 0), state: state,
                           reason: row["reason"]?.string, declaredSize: (row["declared_size"]?.integer(as: UInt64.self) ?? 0), received: received,
                           archiveSHA256: row["archive_sha256"]?.string, installSize: row["install_size"]?.integer(as: UInt64.self),
                           format: ArchiveFormat(rawValue: row["format"]?.string ?? "pack") ?? .pack)
    }

    func uploadPath(_ versionID: Int64) -> String { uploadsPath + "/\(versionID).part" }

    func versionRow(app: String, pack: String, number: Int) throws -> Database.Row {
        let rows = try db.read { try $0.query("SELECT * FROM versions WHERE app = ? AND pack = ? AND number = ? AND deleted = 0",
                                              [.text(app), .text(pack), .integer(Int64(number))]) }
        guard let row = rows.first else { throw BacklotError(.notFound, "no version \(number) of \(app)/\(pack)", context: "\(app)/\(pack)/\(number)") }
        return row
    }

    /// Starts or resumes an upload at `offset` (which must equal the bytes already received).
    /// - Throws: `conflict` when the version is not awaiting an upload, the offset is wrong, or
    ///   another upload to it is running.
    public func beginUpload(app: String, pack: String, number: Int, offset: UInt64) throws -> Upload {
        let row = try versionRow(app: app, pack: pack, number: number)
        guard row["state"]?.string == VersionState.awaitingUpload.rawValue, let id = row["id"]?.int else {
            throw BacklotError(.conflict, "version \(number) of \(app)/\(pack) is not awaiting an upload (\(row["state"]?.string ?? "?"))",
                               context: "\(app)/\(pack)/\(number)", hint: "create a new version to upload another archive")
        }
        let path = uploadPath(id)
        let fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw SystemCall.error("open", path: path) }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            close(fd)
            throw BacklotError(.conflict, "another upload to this version is in progress", context: "\(app)/\(pack)/\(number)")
        }
        var st = stat()
        fstat(fd, &st)
        let received = UInt64(st.st_size)
        guard offset == received else {
            close(fd)
            throw BacklotError(.conflict, "the upload is at byte \(received), not \(offset)", context: "\(app)/\(pack)/\(number)",
                               hint: "ask for the upload's status and continue from the byte it gives")
        }
        return Upload(repository: self, versionID: id, declared: (row["declared_size"]?.integer(as: UInt64.self) ?? 0), received: received,
                      descriptor: FileDescriptor(rawValue: fd, path: path), label: "\(app)/\(pack)/\(number)")
    }

    /// Marks a fully received upload for processing.
    func uploadFinished(versionID: Int64) throws {
        let (changed, app) = try db.transaction { tx in
            let changed = try tx.run("UPDATE versions SET state = 'PROCESSING' WHERE id = ? AND state = 'AWAITING_UPLOAD'", [.integer(versionID)])
            let app = try tx.query("SELECT app FROM versions WHERE id = ?", [.integer(versionID)]).first?["app"]?.string ?? ""
            return (changed, app)
        }
        // Only the request that moved it to PROCESSING schedules the processing.
        if changed == 1 { scheduleProcessing(versionID: versionID, app: app) }
    }

    /// Waits until queued processing is done (for tests and the CLI's synchronous paths).
    public func waitForProcessing() { scheduler.waitUntilIdle() }

    /// Observes processing outcomes (for metrics).
    public func onProcessed(_ observer: @escaping @Sendable (String) -> Void) {
        processingObserver.withLock { $0 = observer }
    }

    /// Queues a version's processing behind its app's other uploads; apps take turns.
    func scheduleProcessing(versionID: Int64, app: String) {
        scheduler.schedule(versionID: versionID, app: app) { [self] flag in
            let outcome: String
            do {
                try process(versionID: versionID, isCancelled: { flag.isSet })
                outcome = "complete"
            } catch {
                let cancelled = (error as? BacklotError)?.code == .cancelled
                let reason = Self.clientReason(for: error)
                _ = try? db.transaction { tx in
                    try tx.run("UPDATE versions SET state = 'FAILED', reason = ? WHERE id = ? AND state = 'PROCESSING'", [.text(reason), .integer(versionID)])
                }
                unlink(uploadPath(versionID))
                outcome = cancelled ? "cancelled" : "failed"
                // The full error, with any server path, goes to the server's log only.
                log("processing of \(app) version row \(versionID) \(outcome): \(error)")
            }
            let observer = processingObserver.withLock { $0 }
            observer?(outcome)
        }
    }

    /// What API clients are shown of a processing failure: what is wrong with the archive (named
    /// "the archive", never by a server path), or that the server failed (its log has the details).
    static func clientReason(for error: any Error) -> String {
        guard let e = error as? BacklotError, e.code == .corruptArchive || e.code == .cancelled || e.code.isInvalidInput else {
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
                if c == " " || c == "\"" || c == "'" || c == "," || c == ")" || c == ":" || c == "\n" { inPath = false; out.append(c) }
            } else if c == "/" && (previous == " " || previous == "(" || previous == "\"" || previous == "'" || previous == "\n") {
                inPath = true
                out += "[path]"
            } else {
                out.append(c)
            }
            previous = c
        }
        return out
    }

    /// Verifies the archive fully, checks its pack ID, records sizes and moves it to the blob store.
    func process(versionID: Int64, isCancelled: @escaping () -> Bool = { false }) throws {
        let rows = try db.read { try $0.query("SELECT * FROM versions WHERE id = ?", [.integer(versionID)]) }
        guard let row = rows.first, let pack = row["pack"]?.string, row["state"]?.string == VersionState.processing.rawValue else { return }
        guard row["deleted"]?.int == 0 else { throw BacklotError(.cancelled, "processing was cancelled: the version was deleted") }
        let declared = row["declared_size"]?.integer(as: UInt64.self) ?? 0
        // The upload, or — when a crash came between moving it to the blob store and recording that — the blob.
        var path = uploadPath(versionID)
        if !FileSystem.exists(path), let sha = row["archive_sha256"]?.string, FileSystem.exists(blobsPath + "/\(sha).pack") {
            path = blobsPath + "/\(sha).pack"
        }
        guard FileSystem.exists(path) else { throw BacklotError(.invalidInput, "the uploaded archive is missing") }
        if row["format"]?.string == ArchiveFormat.appleArchive.rawValue {
            try processAppleArchive(versionID: versionID, path: path, declared: declared, manifest: row["manifest"]?.string ?? "")
            return
        }
        let size = try FileSystem.status(path)?.size ?? 0
        guard size == declared else {
            throw BacklotError(.invalidInput, "the archive has \(size) bytes, not the \(declared) declared")
        }
        let checked = try UploadedPackCheck.run(path: path, maximumInstallSize: maximumInstallSize, isCancelled: isCancelled)
        log("processed \(row["app"]?.string ?? "")/\(pack) version \(row["number"]?.int ?? 0): \(checked.index.chunks.count) distinct chunks, "
            + "\(checked.decompressions) decompressions, \(checked.hashedFileBytes) file bytes hashed, install size \(checked.installSize)")
        guard checked.index.metadata.assetPackID.rawValue == pack else {
            throw BacklotError(.invalidInput, "the archive is the pack \(checked.index.metadata.assetPackID), not \(pack)",
                               hint: "upload it to the pack named in its manifest")
        }
        let sha = try SHA256.hash(fileAt: path)
        try storeBlob(versionID: versionID, from: path, sha: sha)
        let metadata = checked.index.metadata.json.serialized()
        let installSize = try CheckedInteger.convert(checked.installSize, to: Int64.self, "the install size", context: UploadedPackCheck.source)
        let indexLength = try CheckedInteger.convert(checked.header.indexLength, to: Int64.self, "the index length", context: UploadedPackCheck.source)
        let indexOffset = try CheckedInteger.convert(checked.header.indexOffset, to: Int64.self, "the index offset", context: UploadedPackCheck.source)
        try db.transaction { tx in
            try tx.run("""
                UPDATE versions SET state = 'COMPLETE', reason = NULL, archive_sha256 = ?, index_offset = ?, index_length = ?, index_sha256 = ?,
                install_size = ?, metadata = ? WHERE id = ? AND state = 'PROCESSING'
                """, [.text(sha.hex), .integer(indexOffset), .integer(indexLength),
                      .text(checked.header.indexDigest.hex), .integer(installSize), .text(metadata), .integer(versionID)])
        }
    }

    /// An `.aar` is stored as is: its header is checked (it cannot be decompressed here: LZFSE has
    /// no Debian library), its size must be the declared one, and its manifest was checked at creation.
    func processAppleArchive(versionID: Int64, path: String, declared: UInt64, manifest: String) throws {
        let size = try AppleArchiveHeader.check(fileAt: path, source: "the uploaded archive").size
        guard size == declared else { throw BacklotError(.invalidInput, "the archive has \(size) bytes, not the \(declared) declared") }
        let sha = try SHA256.hash(fileAt: path)
        try storeBlob(versionID: versionID, from: path, sha: sha)
        try db.transaction { tx in
            try tx.run("UPDATE versions SET state = 'COMPLETE', reason = NULL, archive_sha256 = ?, metadata = ? WHERE id = ?",
                       [.text(sha.hex), .text(manifest), .integer(versionID)])
        }
    }

    /// Moves a verified upload into the blob store under its SHA-256, recording the SHA-256 first,
    /// so that a crash in between leaves a version that processing can finish from the blob.
    /// Runs under the blob lock, like garbage collection, so a new blob is never collected.
    /// Blobs are 0644: they are hard-linked into the published tree, which must be world-readable.
    func storeBlob(versionID: Int64, from path: String, sha: SHA256Digest) throws {
        try blobLock.withLock { _ in
            try db.transaction { tx in try tx.run("UPDATE versions SET archive_sha256 = ? WHERE id = ?", [.text(sha.hex), .integer(versionID)]) }
            let blob = blobsPath + "/\(sha.hex).pack"
            guard path != blob else { chmod(blob, 0o644); return }
            if !FileSystem.exists(blob) {
                let fd = open(path, O_RDONLY | O_CLOEXEC)
                if fd >= 0 { fchmod(fd, 0o644); fsync(fd); close(fd) }
                try SystemCall.retrying("rename", path: blob) { rename(path, blob) }
                FileSystem.syncDirectory(blobsPath)
            } else {
                unlink(path)
            }
        }
    }

    /// Deletes a version that no channel uses; its blob goes at the next garbage collection. A
    /// version being processed stops processing (the deletion does not wait for it).
    public func deleteVersion(app: String, pack: String, number: Int) throws {
        let id: Int64? = try db.transaction { tx in
            let used = try tx.query("SELECT channel FROM channel_packs WHERE app = ? AND pack = ? AND (live = ? OR candidate = ?)",
                                    [.text(app), .text(pack), .integer(Int64(number)), .integer(Int64(number))])
            if let channel = used.first?["channel"]?.string {
                throw BacklotError(.conflict, "version \(number) of \(app)/\(pack) is released on \(channel)", context: "\(app)/\(pack)/\(number)",
                                   hint: "roll the channel back to another version or withdraw the pack first")
            }
            let id = try tx.query("SELECT id FROM versions WHERE app = ? AND pack = ? AND number = ? AND deleted = 0",
                                  [.text(app), .text(pack), .integer(Int64(number))]).first?["id"]?.int
            // A version being processed is FAILED at once; its processing is stopped below.
            guard try tx.run("""
                UPDATE versions SET deleted = 1,
                    reason = CASE WHEN state = 'PROCESSING' THEN 'deleted while it was being processed' ELSE reason END,
                    state = CASE WHEN state = 'PROCESSING' THEN 'FAILED' ELSE state END
                WHERE app = ? AND pack = ? AND number = ? AND deleted = 0
                """,
                             [.text(app), .text(pack), .integer(Int64(number))]) == 1 else {
                throw BacklotError(.notFound, "no version \(number) of \(app)/\(pack)", context: "\(app)/\(pack)/\(number)")
            }
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
        let live = Set(try db.read { try $0.query("SELECT archive_sha256 FROM versions WHERE deleted = 0 AND archive_sha256 IS NOT NULL") }
            .compactMap { $0["archive_sha256"]?.string })
        for name in (try? FileManager.default.contentsOfDirectory(atPath: blobsPath)) ?? [] where name.hasSuffix(".pack") {
            if !live.contains(String(name.dropLast(5))) { unlink(blobsPath + "/" + name) }
        }
        for name in try tree.fileNames(in: "v1/packs") where name.hasSuffix(".pack") {
            if !live.contains(String(name.dropLast(5))) { try tree.remove("v1/packs/" + name) }
        }
        for row in try db.read({ try $0.query("SELECT id FROM versions WHERE (deleted = 1 AND state != 'PROCESSING') OR state = 'FAILED'") }) {
            if let id = row["id"]?.int { unlink(uploadPath(id)) }
        }
    }
}

/// An upload in progress: bytes are appended at the end, never past the declared size.
public final class Upload: @unchecked Sendable {
    let repository: Repository
    let versionID: Int64
    public let declared: UInt64
    public private(set) var received: UInt64
    let descriptor: FileDescriptor
    let label: String
    private var closed = false

    init(repository: Repository, versionID: Int64, declared: UInt64, received: UInt64, descriptor: FileDescriptor, label: String) {
        self.repository = repository
        self.versionID = versionID
        self.declared = declared
        self.received = received
        self.descriptor = descriptor
        self.label = label
    }

    /// Appends bytes. - Throws: `quotaExceeded` past the declared size (nothing past it is written).
    public func append(_ bytes: UnsafeRawBufferPointer) throws {
        guard received + UInt64(bytes.count) <= declared else {
            throw BacklotError(.quotaExceeded, "the upload is larger than the \(declared) bytes declared", context: label,
                               hint: "create a version with the archive's exact size")
        }
        try descriptor.write(bytes, at: received)
        received += UInt64(bytes.count)
    }

    /// Ends this request's part of the upload; when everything arrived, processing starts.
    /// - Returns: whether the upload is complete.
    @discardableResult
    public func close() throws -> Bool {
        guard !closed else { return received == declared }
        closed = true
        do { try descriptor.sync() } catch {
            descriptor.close()   // releases the flock, whatever happens
            throw error
        }
        descriptor.close()
        guard received == declared else { return false }
        try repository.uploadFinished(versionID: versionID)
        return true
    }

    deinit { if !closed { descriptor.close() } }
}
