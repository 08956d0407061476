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
            let next = (try tx.query("SELECT MAX(number) AS n FROM versions WHERE app = ? AND pack = ?", [.text(app), .text(pack)]).first?["n"]?.int ?? 0) + 1
            try tx.run("INSERT INTO versions(app, pack, number, state, declared_size, created, format, manifest) VALUES (?, ?, ?, 'AWAITING_UPLOAD', ?, ?, ?, ?)",
                       [.text(app), .text(pack), .integer(next), .integer(Int64(size)), .integer(Self.now()), .text(format.rawValue),
                        manifestText.map { .text($0) } ?? .null])
            return Int(next)
        }
        return try version(app: app, pack: pack, number: number)
    }

    /// Apple's quota rule: per pack, the largest retained version; summed over the app's packs.
    func quotaUse(_ tx: inout Database.Connection, app: String, replacing: (pack: String, size: UInt64)) throws -> UInt64 {
        let rows = try tx.query("""
            SELECT pack, MAX(declared_size) AS m FROM versions
            WHERE app = ? AND deleted = 0 AND state != 'FAILED' GROUP BY pack
            """, [.text(app)])
        var total: UInt64 = 0
        var sawPack = false
        for r in rows {
            var m = UInt64(r["m"]?.int ?? 0)
            if r["pack"]?.string == replacing.pack { m = max(m, replacing.size); sawPack = true }
            total += m
        }
        return sawPack ? total : total + replacing.size
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
            received = state == .failed ? 0 : UInt64(row["declared_size"]?.int ?? 0)
        }
        return VersionInfo(app: row["app"]?.string ?? "", pack: row["pack"]?.string ?? "", number: Int(row["number"]?.int ?? 0), state: state,
                           reason: row["reason"]?.string, declaredSize: UInt64(row["declared_size"]?.int ?? 0), received: received,
                           archiveSHA256: row["archive_sha256"]?.string, installSize: row["install_size"]?.int.map { UInt64($0) },
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
        return Upload(repository: self, versionID: id, declared: UInt64(row["declared_size"]?.int ?? 0), received: received,
                      descriptor: FileDescriptor(rawValue: fd, path: path), label: "\(app)/\(pack)/\(number)")
    }

    /// Marks a fully received upload for processing.
    func uploadFinished(versionID: Int64) throws {
        let changed = try db.transaction { tx in
            try tx.run("UPDATE versions SET state = 'PROCESSING' WHERE id = ? AND state = 'AWAITING_UPLOAD'", [.integer(versionID)])
        }
        // Only the request that moved it to PROCESSING schedules the processing.
        if changed == 1 { scheduleProcessing(versionID: versionID) }
    }

    /// Waits until queued processing is done (for tests and the CLI's synchronous paths).
    public func waitForProcessing() { processingQueue.sync {} }

    /// Observes processing outcomes (for metrics).
    public func onProcessed(_ observer: @escaping @Sendable (String) -> Void) {
        processingObserver.withLock { $0 = observer }
    }

    func scheduleProcessing(versionID: Int64) {
        processingQueue.async { [self] in
            let outcome: String
            do {
                try process(versionID: versionID)
                outcome = "complete"
            } catch {
                let reason = (error as? BacklotError).map { e in e.context.map { "\($0): \(e.message)" } ?? e.message } ?? "\(error)"
                _ = try? db.transaction { tx in
                    try tx.run("UPDATE versions SET state = 'FAILED', reason = ? WHERE id = ? AND state = 'PROCESSING'", [.text(reason), .integer(versionID)])
                }
                unlink(uploadPath(versionID))
                outcome = "failed"
            }
            let observer = processingObserver.withLock { $0 }
            observer?(outcome)
        }
    }

    /// Verifies the archive fully, checks its pack ID, records sizes and moves it to the blob store.
    func process(versionID: Int64) throws {
        let rows = try db.read { try $0.query("SELECT * FROM versions WHERE id = ?", [.integer(versionID)]) }
        guard let row = rows.first, let pack = row["pack"]?.string, row["state"]?.string == VersionState.processing.rawValue else { return }
        // The upload, or — when a crash came between moving it to the blob store and recording that — the blob.
        var path = uploadPath(versionID)
        if !FileSystem.exists(path), let sha = row["archive_sha256"]?.string, FileSystem.exists(blobsPath + "/\(sha).pack") {
            path = blobsPath + "/\(sha).pack"
        }
        guard FileSystem.exists(path) else { throw BacklotError(.invalidInput, "the uploaded archive is missing") }
        if row["format"]?.string == ArchiveFormat.appleArchive.rawValue {
            try processAppleArchive(versionID: versionID, path: path, declared: UInt64(row["declared_size"]?.int ?? -1), manifest: row["manifest"]?.string ?? "")
            return
        }
        let reader = try PackReader(path: path)
        guard reader.fileSize == UInt64(row["declared_size"]?.int ?? -1) else {
            throw BacklotError(.invalidInput, "the archive has \(reader.fileSize) bytes, not the \(row["declared_size"]?.int ?? 0) declared")
        }
        try reader.verify(jobs: 1)
        guard reader.index.metadata.assetPackID.rawValue == pack else {
            throw BacklotError(.invalidInput, "the archive is the pack \(reader.index.metadata.assetPackID), not \(pack)",
                               hint: "upload it to the pack named in its manifest")
        }
        let sha = try SHA256.hash(fileAt: path)
        try storeBlob(versionID: versionID, from: path, sha: sha)
        let metadata = reader.index.metadata.json.serialized()
        try db.transaction { tx in
            try tx.run("""
                UPDATE versions SET state = 'COMPLETE', reason = NULL, archive_sha256 = ?, index_offset = ?, index_length = ?, index_sha256 = ?,
                install_size = ?, metadata = ? WHERE id = ?
                """, [.text(sha.hex), .integer(Int64(reader.header.indexOffset)), .integer(Int64(reader.header.indexLength)),
                      .text(reader.packDigest.hex), .integer(Int64(reader.index.installSize)), .text(metadata), .integer(versionID)])
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
    /// Runs on the processing queue, like garbage collection, so a new blob is never collected.
    func storeBlob(versionID: Int64, from path: String, sha: SHA256Digest) throws {
        try db.transaction { tx in try tx.run("UPDATE versions SET archive_sha256 = ? WHERE id = ?", [.text(sha.hex), .integer(versionID)]) }
        let blob = blobsPath + "/\(sha.hex).pack"
        guard path != blob else { return }
        if !FileSystem.exists(blob) {
            let fd = open(path, O_RDONLY)
            if fd >= 0 { fsync(fd); close(fd) }
            try SystemCall.retrying("rename", path: blob) { rename(path, blob) }
            FileSystem.syncDirectory(blobsPath)
        } else {
            unlink(path)
        }
    }

    /// Deletes a version that no channel uses; its blob goes at the next garbage collection.
    public func deleteVersion(app: String, pack: String, number: Int) throws {
        try db.transaction { tx in
            let used = try tx.query("SELECT channel FROM channel_packs WHERE app = ? AND pack = ? AND (live = ? OR candidate = ?)",
                                    [.text(app), .text(pack), .integer(Int64(number)), .integer(Int64(number))])
            if let channel = used.first?["channel"]?.string {
                throw BacklotError(.conflict, "version \(number) of \(app)/\(pack) is released on \(channel)", context: "\(app)/\(pack)/\(number)",
                                   hint: "roll the channel back to another version or withdraw the pack first")
            }
            guard try tx.run("UPDATE versions SET deleted = 1 WHERE app = ? AND pack = ? AND number = ? AND deleted = 0",
                             [.text(app), .text(pack), .integer(Int64(number))]) == 1 else {
                throw BacklotError(.notFound, "no version \(number) of \(app)/\(pack)", context: "\(app)/\(pack)/\(number)")
            }
        }
        try collectGarbage()
    }

    /// Removes blobs and published archives that no retained version references. Runs on the
    /// processing queue, so that a blob being stored is never taken for garbage.
    public func collectGarbage() throws {
        try processingQueue.sync { try collectGarbageNow() }
    }

    private func collectGarbageNow() throws {
        let live = Set(try db.read { try $0.query("SELECT archive_sha256 FROM versions WHERE deleted = 0 AND archive_sha256 IS NOT NULL") }
            .compactMap { $0["archive_sha256"]?.string })
        for dir in [blobsPath, directory.publicTreePath + "/v1/packs"] {
            for name in (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? [] where name.hasSuffix(".pack") {
                if !live.contains(String(name.dropLast(5))) { unlink(dir + "/" + name) }
            }
        }
        for row in try db.read({ try $0.query("SELECT id FROM versions WHERE deleted = 1 OR state = 'FAILED'") }) {
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
