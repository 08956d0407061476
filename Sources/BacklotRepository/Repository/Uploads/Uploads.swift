import BacklotBasics
import BacklotCrypto
import BacklotFormat
import BacklotJSON
import BacklotProtocol
import BacklotStore
import Foundation
import Synchronization

/// Versions of packs and their archives (table `versions`): a version is created awaiting its
/// upload (within the app's quota), receives its archive (resumable, from several requests or
/// servers), is processed (verified, stored by SHA-256, its deltas made) and becomes COMPLETE or
/// FAILED; deleting a version, and collecting the archives no version uses, end its life.
///
/// ```swift
/// let version = try repository.uploads.createVersion(app: "com.example.game", pack: "Levels", size: UInt64(bytes.count))
/// let upload = try repository.uploads.beginUpload(app: "com.example.game", pack: "Levels", number: version.number, offset: 0)
/// try bytes.withUnsafeBytes { try upload.append($0) }
/// try upload.close()
/// repository.uploads.waitForProcessing()
/// ```
public final class Uploads: Sendable {
    let db: any MetadataDatabase
    /// Where uploads and verified archives are kept.
    let archives: any ArchiveStore
    /// The published tree (garbage collection removes the packs no version uses from it).
    let tree: any PublishedTreeStore
    let tokens: Tokens
    let publication: Publication
    let log: EventLog
    /// This process's name in leases (``Repository/instanceID``).
    let instanceID: String
    /// How long a lease lasts unrenewed, in seconds (``Repository/leaseDuration``).
    let leaseDuration: Double
    /// Per-app quota: the sum over packs of each pack's largest retained version (Apple's rule).
    let quotaBytes: UInt64
    /// The largest install size (sum of file sizes) of a pack this server processes.
    let maximumInstallSize: UInt64
    /// Processing of uploaded archives: fair between apps, cancellable.
    let scheduler: ProcessingScheduler
    /// Storing a blob and collecting garbage exclude each other (a new blob is never taken for garbage).
    let blobLock = Mutex(())
    /// Called with "complete", "failed", "cancelled" or "interrupted" (the server stopped) after each processing.
    let processingObserver = Mutex<(@Sendable (String) -> Void)?>(nil)
    /// Called with the outcome and the seconds it took, after each processing (for the metrics' histogram).
    let processingTimeObserver = Mutex<(@Sendable (String, Double) -> Void)?>(nil)
    /// Versions whose upload a request of this process is receiving now: never taken for abandoned.
    let activeUploads = Mutex<Set<Int64>>([])

    init(
        db: any MetadataDatabase, archives: any ArchiveStore, tree: any PublishedTreeStore, tokens: Tokens,
        publication: Publication, log: EventLog, instanceID: String, leaseDuration: Double, quotaBytes: UInt64,
        maximumInstallSize: UInt64, processingWorkers: Int
    ) {
        self.db = db
        self.archives = archives
        self.tree = tree
        self.tokens = tokens
        self.publication = publication
        self.log = log
        self.instanceID = instanceID
        self.leaseDuration = leaseDuration
        self.quotaBytes = quotaBytes
        self.maximumInstallSize = maximumInstallSize
        scheduler = ProcessingScheduler(workers: processingWorkers)
    }

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
    /// let (version, created) = try repository.uploads.openVersion(app: "com.example.game", pack: "Levels", size: 5_000, archiveSHA256: digest)
    /// if !created { print("already version \(version.number), \(version.received) bytes received") }
    /// ```
    /// The version records the token that created it (``Caller/current``): only that token, or an
    /// admin token, may upload its archive (``beginUpload(app:pack:number:offset:by:)``).
    /// - Parameters:
    ///   - archiveSHA256: the archive's SHA-256, 64 lowercase hex digits.
    ///   - notes: release notes, shown with the version and its release requests (``ReleaseNotes``).
    /// - Throws: what ``createVersion(app:pack:size:format:manifest:)`` throws; `invalidInput` for a
    ///   digest that is not 64 lowercase hex digits or notes ``ReleaseNotes/check(_:)`` refuses.
    public func openVersion(
        app: String, pack: String, size: UInt64, format: ArchiveFormat = .pack, manifest: JSONNode? = nil,
        archiveSHA256: String? = nil, notes: String? = nil
    ) throws -> (version: VersionInfo, created: Bool) {
        if let notes { try ReleaseNotes.check(notes) }
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
            // The pack's metadata, and the selectors that processing checks the archive's entries against.
            manifestText = UploadManifest.keptText(of: manifest, parsed: parsed)
        }
        let header = UInt64(format == .pack ? PackHeader.size : AppleArchiveHeader.prefixLength)
        guard size >= header else {
            throw BacklotError(
                .invalidInput, "a pack archive of \(size) bytes is smaller than its header (\(header) bytes)",
                context: "size", hint: "declare the archive's exact size in bytes")
        }
        guard size <= quotaBytes else { throw oversized(size) }
        let creator = Caller.current
        let (number, created): (Int, Bool) = try db.transaction { tx in
            try Apps.requirePack(&tx, app, pack)
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
                INSERT INTO versions(app, pack, number, state, declared_size, created, format, manifest, declared_sha256, upload_activity, created_by,
                    notes)
                VALUES (?, ?, ?, 'AWAITING_UPLOAD', ?, ?, ?, ?, ?, ?, ?, ?)
                """,
                [
                    .text(app), .text(pack), .integer(next),
                    .integer(try CheckedInteger.convert(size, to: Int64.self, "the declared size")),
                    .integer(Repository.now()), .text(format.rawValue), manifestText.map { .text($0) } ?? .null,
                    archiveSHA256.map { .text($0) } ?? .null, .integer(Repository.now()),
                    creator.map { .integer(Int64($0.id)) } ?? .null, notes.map { .text($0) } ?? .null,
                ])
            try AuditLog.record(
                &tx, .versionCreate, app: app, pack: pack, version: Int(exactly: next),
                details: [.bytes: String(size)])
            return (
                try CheckedInteger.convert(
                    next, to: Int.self, "the version number", context: "\(app)/\(pack)", code: .io), true
            )
        }
        return (try version(app: app, pack: pack, number: number), created)
    }

    /// One version. - Throws: `notFound`.
    public func version(app: String, pack: String, number: Int) throws -> VersionInfo {
        info(try versionRow(app: app, pack: pack, number: number))
    }

    /// All versions of a pack, newest first.
    public func versions(app: String, pack: String) throws -> [VersionInfo] {
        try db.transaction { tx in
            try Apps.requirePack(&tx, app, pack)
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
        var info = VersionInfo(
            app: row["app"]?.string ?? "", pack: row["pack"]?.string ?? "",
            number: (row["number"]?.integer(as: Int.self) ?? 0), state: state,
            reason: row["reason"]?.string, declaredSize: (row["declared_size"]?.integer(as: UInt64.self) ?? 0),
            received: received,
            archiveSHA256: row["archive_sha256"]?.string, installSize: row["install_size"]?.integer(as: UInt64.self),
            format: ArchiveFormat(rawValue: row["format"]?.string ?? "pack") ?? .pack, notes: row["notes"]?.string)
        // Processing stored the pack's metadata; a variant pack's lists its variants.
        if let text = row["metadata"]?.string {
            info.variants =
                (try? Publication.storedMetadata(text, of: "\(info.app)/\(info.pack)/\(info.number)"))?
                .variants
        }
        return info
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

    /// Records a change of the version row `versionID` in the audit trail (its app, pack and number
    /// read in the same transaction).
    func auditVersion(
        _ tx: inout any MetadataConnection, _ action: API.AuditAction, versionID: Int64,
        details: [API.AuditDetail: String] = [:],
        system: Bool = false
    ) throws {
        let row = try tx.query("SELECT app, pack, number FROM versions WHERE id = ?", [.integer(versionID)]).first
        try AuditLog.record(
            &tx, action, app: row?["app"]?.string, pack: row?["pack"]?.string,
            version: row?["number"]?.integer(as: Int.self), details: details, system: system)
    }

    // MARK: What the other services read of versions

    /// Refuses a version that does not exist (`notFound`) or is not COMPLETE (`conflict`): what a release needs.
    static func requireComplete(
        _ tx: inout any MetadataConnection, _ app: String, _ pack: String, _ version: Int
    ) throws {
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

    /// A version's row, deleted or not (nil when the pack never had that number).
    static func storedVersion(
        _ tx: inout any MetadataConnection, app: String, pack: String, number: Int64
    ) throws -> Database.Row? {
        try tx.query(
            "SELECT * FROM versions WHERE app = ? AND pack = ? AND number = ?",
            [.text(app), .text(pack), .integer(number)]
        ).first
    }

    /// Whether the app ever had an `.aar` version (Apple's manifests are published for it).
    static func hasAppleArchive(_ tx: inout any MetadataConnection, app: String) throws -> Bool {
        try !tx.query("SELECT 1 FROM versions WHERE app = ? AND format = 'aar' LIMIT 1", [.text(app)]).isEmpty
    }

    /// The archives (`archive_sha256`) of the newest `limit` COMPLETE pack versions before `number`:
    /// the bases of the deltas into it.
    static func deltaBases(
        _ tx: inout any MetadataConnection, app: String, pack: String, before number: Int64, limit: Int
    ) throws -> [Database.Row] {
        try tx.query(
            """
            SELECT archive_sha256 FROM versions WHERE app = ? AND pack = ? AND number < ? AND state = 'COMPLETE'
            AND format = 'pack' AND deleted = 0 AND archive_sha256 IS NOT NULL ORDER BY number DESC LIMIT ?
            """, [.text(app), .text(pack), .integer(number), .integer(Int64(limit))])
    }

    /// The index SHA-256s (hex) of every processed version of a pack: the bases its devices can
    /// hold, so the only ones a catalog of it names deltas from.
    static func indexDigests(_ tx: inout any MetadataConnection, app: String, pack: String) throws -> Set<String> {
        Set(
            try tx.query(
                "SELECT index_sha256 FROM versions WHERE app = ? AND pack = ? AND index_sha256 IS NOT NULL",
                [.text(app), .text(pack)]
            ).compactMap { $0["index_sha256"]?.string })
    }

    /// The newest retained version with the archive `sha` (`app`, `pack`, `number`): of the app
    /// `preferring` when it has one, else of any app; nil when none.
    static func newestVersion(
        _ tx: inout any MetadataConnection, archive sha: String, preferring app: String? = nil
    ) throws -> Database.Row? {
        try tx.query(
            """
            SELECT app, pack, number FROM versions WHERE archive_sha256 = ? AND deleted = 0
            ORDER BY CASE WHEN app = ? THEN 0 ELSE 1 END, id DESC LIMIT 1
            """,
            [.text(sha), .text(app ?? "")]
        ).first
    }
}
