import BacklotBasics
import BacklotProtocol
import BacklotStore
import Foundation

/// A pack repository: apps, packs, versions (upload → processing → COMPLETE/FAILED), releases per
/// channel with approvals and staged rollouts, tokens, and the signed published tree.
///
/// `Repository` is the composition root: it opens the metadata database, migrates its schema,
/// checks the storage it records, and hands one database to the services, each of which owns
/// its tables and their SQL:
///
/// | service | concern | tables |
/// |---|---|---|
/// | ``apps`` (``Apps``) | apps, packs, the four-eyes rule | `apps`, `packs` |
/// | ``uploads`` (``Uploads``) | versions: creation, quota, resumable uploads, processing, Apple archives, deletion, garbage collection | `versions` |
/// | ``releases`` (``Releases``) | releases, approvals, rollouts, phased rollouts, rollbacks, withdrawals | `channel_packs`, `live_history`, `release_requests`, `rollout_phases` |
/// | ``publication`` (``Publication``) | catalogs, Apple manifests, deltas, signing keys, re-signing | `catalogs` |
/// | ``tokens`` (``Tokens``) | tokens | `tokens` |
/// | ``audit`` (``AuditLog``) | the audit trail | `audit` |
/// | ``downloads`` (``DownloadCounts``) | download counts | `downloads` |
/// | ``deviceReports`` (``DeviceReports``) | devices' reports: adoption, install outcomes | `device_reports` |
/// | ``leases`` (``Leases``) | named leases between servers | `leases` |
///
/// Metadata lives in a ``MetadataDatabase``: SQLite (`DIR/meta.sqlite`, WAL) by default, or
/// PostgreSQL (`PostgresDatabase`); archives (uploads in progress, and verified archives by
/// SHA-256) in an ``ArchiveStore``: `DIR/uploads` and `DIR/blobs` by default, or a bucket shared
/// by several servers, which then divide the work through leases (``Leases``). The schema is migrated on open (``schemaSteps``). Every change that affects clients republishes the channel's
/// catalog atomically (signed, written beside, renamed).
///
/// ```swift
/// let repo = try Repository(directory: RepositoryDirectory(path: "data"))
/// try repo.apps.create("com.example.game")
/// // Metadata in PostgreSQL, the folder for blobs and the published tree:
/// let shared = try Repository(directory: RepositoryDirectory(path: "data"),
///                             database: PostgresDatabase(url: "postgresql://backlot@db:5432/backlot"))
/// ```
public final class Repository: Sendable {
    public let directory: RepositoryDirectory
    /// Where the published tree is written: the data folder's `public/` (the default) or a bucket.
    public let tree: any PublishedTreeStore
    /// Where uploads and verified archives are kept: the data folder (the default) or a bucket.
    public let archives: any ArchiveStore
    /// This process's name in leases (unique per process: host, process ID and a random part).
    public let instanceID: String
    /// How long a lease (an upload to a shared store, a processing, the re-signing) lasts without
    /// renewal: how soon another server takes over the work of one that died. Seconds.
    public let leaseDuration: Double
    /// The default lease: 30 seconds.
    public static let defaultLeaseDuration: Double = 30
    let db: any MetadataDatabase
    /// Per-app quota: the sum over packs of each pack's largest retained version (Apple's rule).
    public let quotaBytes: UInt64
    /// Packs per app.
    public let maximumPacksPerApp: Int
    /// The largest install size (sum of file sizes) of a pack this server processes.
    public let maximumInstallSize: UInt64
    /// The default install-size limit: 64 GiB.
    public static let defaultMaximumInstallSize: UInt64 = 64 << 30
    /// Receives the server's log lines (processing outcomes with their full errors).
    let eventLog = EventLog()

    /// Apps, packs and the four-eyes rule.
    public let apps: Apps
    /// Versions: creation, quota, resumable uploads, processing, deletion, garbage collection.
    public let uploads: Uploads
    /// Releases, approvals, rollouts, rollbacks and withdrawals.
    public let releases: Releases
    /// Catalogs, Apple's manifests, deltas, signing keys and re-signing.
    public let publication: Publication
    /// The tokens.
    public let tokens: Tokens
    /// The audit trail.
    public let audit: AuditLog
    /// Download counts.
    public let downloads: DownloadCounts
    /// Devices' reports: adoption and install outcomes, in aggregate.
    public let deviceReports: DeviceReports
    /// Named leases between the servers of one database.
    public let leases: Leases

    /// Sends the server's log lines (processing outcomes, with the full error and paths that API
    /// clients are not shown) to `log`.
    public func onEvent(_ log: @escaping @Sendable (String) -> Void) {
        eventLog.send(to: log)
    }

    /// Writes a line to the server's log (``onEvent(_:)``): what API clients are not shown, such
    /// as the full error behind a 500 answer.
    public func log(_ line: String) {
        eventLog(line)
    }

    public var adminTokenPath: String { directory.path + "/admin-token" }

    /// Opens the repository, creating its database and an admin token on first use.
    ///
    /// The schema is brought to ``schemaVersion`` (steps missing from an older database are
    /// applied, each once); a database newer than this build is refused. Opening also makes the folder's modes right whatever the umask (the published tree
    /// world-readable, the database and secrets private) and removes temporaries an earlier crash left.
    /// - Parameters:
    ///   - maximumInstallSize: processing refuses a pack whose files add up to more (``defaultMaximumInstallSize``).
    ///   - processingWorkers: archives processed at once (each app has at most one at a time).
    ///   - database: where the metadata lives; nil (the default) is SQLite at `DIR/meta.sqlite`, and
    ///     then the first admin token is made and written to ``adminTokenPath`` on first use. With a
    ///     database given (PostgreSQL, shared by several servers), no token file is written: the
    ///     first admin token comes from ``Tokens/createInitialAdmin(label:)`` (`backlot admin init`).
    ///   - tree: where the published tree is written; nil (the default) is the folder's `public/`
    ///     (``LocalPublishedTree``). Another store (``S3PublishedTree``) is given the key lists the
    ///     folder holds that it lacks, when the repository opens.
    ///   - archives: where uploads and verified archives go; nil (the default) is the data folder
    ///     (``LocalArchiveStore``). A shared store (``S3ArchiveStore``) lets several servers on one
    ///     database take each other's uploads and processing over.
    ///   - leaseDuration: seconds a lease lasts unrenewed (``defaultLeaseDuration``).
    ///   - adoptStorage: record this repository's storage in the database even when the database
    ///     records another (the storage was moved or copied); see below.
    ///
    /// The database records the storage (the data folder, or the bucket) it was first opened
    /// with, and a repository with other storage is refused: two servers sharing a database
    /// without sharing a bucket would each see versions whose archives only the other has.
    /// - Throws: ``BacklotError/Code/unavailable`` when the database cannot be reached;
    ///   ``BacklotError/Code/invalidInput`` when its schema is newer than this build knows;
    ///   ``BacklotError/Code/conflict`` when the database records other storage than this one's.
    public init(
        directory: RepositoryDirectory, quotaBytes: UInt64 = API.Limits.quotaBytes, maximumPacksPerApp: Int = 100,
        maximumInstallSize: UInt64 = Repository.defaultMaximumInstallSize, processingWorkers: Int = 2,
        database: (any MetadataDatabase)? = nil, tree: (any PublishedTreeStore)? = nil,
        archives: (any ArchiveStore)? = nil, leaseDuration: Double = Repository.defaultLeaseDuration,
        adoptStorage: Bool = false
    ) throws {
        self.directory = directory
        self.tree = tree ?? LocalPublishedTree(directory: directory)
        self.archives = try archives ?? LocalArchiveStore(directory: directory)
        self.leaseDuration = max(0.5, leaseDuration)
        instanceID = Self.newInstanceID()
        self.quotaBytes = quotaBytes
        self.maximumPacksPerApp = maximumPacksPerApp
        self.maximumInstallSize = maximumInstallSize
        try directory.makeTreeDirectory(directory.publicTreePath + "/" + PublishedTreeLayout.packsFolder)
        try directory.makeTreeDirectory(directory.publicTreePath + "/" + PublishedTreeLayout.appsFolder)
        try directory.repairModes()
        if tree != nil {
            // The folder made the first key list (RepositoryDirectory.init): the tree must serve it too.
            let local = LocalPublishedTree(directory: directory)
            let keys = PublishedTreeLayout.keysFolder
            for name in try local.fileNames(in: keys) where !(try self.tree.exists(keys + "/" + name)) {
                try self.tree.copyFile(from: try local.path(keys + "/" + name), to: keys + "/" + name, replacing: false)
            }
        }
        db = try database ?? SQLiteMetadataDatabase(path: directory.path + "/meta.sqlite", mode: 0o600)
        audit = AuditLog(db: db)
        tokens = Tokens(db: db)
        apps = Apps(db: db, quotaBytes: quotaBytes, maximumPacksPerApp: maximumPacksPerApp)
        publication = Publication(
            db: db, directory: directory, tree: self.tree, archives: self.archives, audit: audit, log: eventLog)
        releases = Releases(db: db, directory: directory, publication: publication)
        uploads = Uploads(
            db: db, archives: self.archives, tree: self.tree, tokens: tokens, publication: publication, log: eventLog,
            instanceID: instanceID, leaseDuration: self.leaseDuration, quotaBytes: quotaBytes,
            maximumInstallSize: maximumInstallSize, processingWorkers: processingWorkers)
        downloads = DownloadCounts(db: db)
        deviceReports = DeviceReports(db: db)
        leases = Leases(db: db, instanceID: instanceID)
        try SchemaMigration.apply(Self.schemaSteps, to: db)
        try checkStorageRecord(adopting: adoptStorage)
        if database == nil, !(try tokens.hadAdmin()) {
            let token = try tokens.issue(role: .admin, person: Tokens.initialAdminPerson, label: "initial admin").token
            try RepositoryDirectory.writeSecret(token + "\n", to: adminTokenPath)
        }
        if database == nil {
            // DIR/meta.sqlite is this server's alone: leases an earlier process left are void.
            try db.transaction { tx in
                try Uploads.voidLeases(&tx)
                try Leases.voidAll(&tx)
            }
        }
        // Uploads that were processing when a server died are processed again (once their lease ran out).
        try uploads.takeOverAbandonedProcessing()
    }

    /// A name for this process in leases: `HOST:PID:RANDOM`.
    static func newInstanceID() -> String {
        var generator = SystemRandomNumberGenerator()
        let random = String(UInt64.random(in: 0...UInt64.max, using: &generator), radix: 36)
        return "\(ProcessInfo.processInfo.hostName):\(ProcessInfo.processInfo.processIdentifier):\(random)"
    }

    static func now() -> Int64 { Int64(Date().timeIntervalSince1970) }

    /// Milliseconds since 1970, the unit of lease expiries.
    static func nowMilliseconds() -> Int64 { Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)) }

    /// How long an upload may see no bytes before it is removed: seven days, in seconds.
    public static let defaultAbandonedUploadsAfter: TimeInterval = 604_800

    /// The named lease of the server that re-signs catalogs.
    public static let resigningLease = "catalog re-signing"

    /// One round of the work the servers of a repository share (`backlot serve` runs it every few
    /// seconds): processing that a server which died left is taken over, and — when `resigning`
    /// and this server holds (or takes) the re-signing lease — catalogs close to expiry are
    /// re-signed, phased rollouts move on (``Releases/advancePhasedRollouts(now:)``) and devices'
    /// figures past their keeping are deleted (``DeviceReports/removeExpired(now:)``). The lease
    /// lasts three minutes: while any server runs, one of them re-signs.
    /// Uploads that saw no bytes for longer than `abandonedUploadsAfter` seconds are removed
    /// (``Uploads/removeAbandoned(olderThan:now:)``). With `collectingGarbage`, the lease holder
    /// also collects what no kept version uses (``Uploads/collectGarbage()``; `backlot serve` asks
    /// for it hourly): a deletion collects at once, and this catches what no deletion did, such
    /// as the deltas of a version that failed, or was deleted, once its deltas were published.
    /// Returns whether it collected (a failure is logged, and the rest of the round still done).
    ///
    /// ```swift
    /// try repository.shareWork(resigning: true, abandonedUploadsAfter: 3 * 86_400)
    /// ```
    /// - Throws: ``BacklotError/Code/unavailable`` when the database cannot be reached; what publishing throws.
    @discardableResult
    public func shareWork(
        resigning: Bool, abandonedUploadsAfter: TimeInterval = Repository.defaultAbandonedUploadsAfter,
        collectingGarbage: Bool = false
    ) throws -> Bool {
        try uploads.takeOverAbandonedProcessing()
        try uploads.removeAbandoned(olderThan: abandonedUploadsAfter)
        guard resigning, try leases.acquire(Self.resigningLease, for: 180) else { return false }
        var collected = false
        if collectingGarbage {
            do {
                try uploads.collectGarbage()
                collected = true
            } catch {
                log("garbage collection: \(error)")
            }
        }
        try publication.resign()
        for line in try releases.advancePhasedRollouts() { log(line) }
        try deviceReports.removeExpired()
        return collected
    }
}
