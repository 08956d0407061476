import BacklotBasics
import BacklotCatalog
import BacklotCrypto
import BacklotFormat
import BacklotStore
import Foundation
import Synchronization

/// A pack repository: apps, packs, versions (upload → processing → COMPLETE/FAILED), releases per
/// channel with approvals and staged rollouts, tokens, and the signed published tree.
///
/// Metadata lives in a ``MetadataDatabase``: SQLite (`DIR/meta.sqlite`, WAL) by default, or
/// PostgreSQL (`PostgresDatabase`); archives (uploads in progress, and verified archives by
/// SHA-256) in an ``ArchiveStore``: `DIR/uploads` and `DIR/blobs` by default, or a bucket shared
/// by several servers, which then divide the work through leases (``acquireLease(_:for:)``). The schema is migrated on open (``schemaSteps``). Every change that affects clients republishes the channel's
/// catalog atomically (signed, written beside, renamed).
///
/// ```swift
/// let repo = try Repository(directory: RepositoryDirectory(path: "data"))
/// try repo.createApp("com.example.game")
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
    /// Processing of uploaded archives: fair between apps, cancellable.
    let scheduler: ProcessingScheduler
    /// Storing a blob and collecting garbage exclude each other (a new blob is never taken for garbage).
    let blobLock = Mutex(())
    /// Called with "complete", "failed", "cancelled" or "interrupted" (the server stopped) after each processing.
    let processingObserver = Mutex<(@Sendable (String) -> Void)?>(nil)
    /// Called with the outcome and the seconds it took, after each processing (for the metrics' histogram).
    let processingTimeObserver = Mutex<(@Sendable (String, Double) -> Void)?>(nil)
    /// Receives the server's log lines (processing outcomes with their full errors).
    let eventLog = Mutex<(@Sendable (String) -> Void)?>(nil)
    /// Versions whose upload a request of this process is receiving now: never taken for abandoned.
    let activeUploads = Mutex<Set<Int64>>([])
    /// The absolute URL the published tree is reachable at (Apple's download manifests need absolute pack URLs).
    let publicURLStorage = Mutex<String?>(nil)
    /// How many earlier versions get a delta into each new one (Repository+Deltas.swift).
    let deltaBasesStorage = Mutex(Repository.defaultDeltaBases)

    /// Sets the absolute base URL of the published tree (`https://host/`), for Apple download manifests.
    public func setPublicURL(_ url: String) {
        publicURLStorage.withLock { $0 = url.hasSuffix("/") ? url : url + "/" }
    }

    public var publicURL: String? { publicURLStorage.withLock { $0 } }

    /// Sends the server's log lines (processing outcomes, with the full error and paths that API
    /// clients are not shown) to `log`.
    public func onEvent(_ log: @escaping @Sendable (String) -> Void) {
        eventLog.withLock { $0 = log }
    }

    /// Writes a line to the server's log (``onEvent(_:)``): what API clients are not shown, such
    /// as the full error behind a 500 answer.
    public func log(_ line: String) {
        let sink = eventLog.withLock { $0 }
        sink?(line)
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
    ///     first admin token comes from ``createInitialAdminToken(label:)`` (`backlot admin init`).
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
        directory: RepositoryDirectory, quotaBytes: UInt64 = 200_000_000_000, maximumPacksPerApp: Int = 100,
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
        scheduler = ProcessingScheduler(workers: processingWorkers)
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
        try SchemaMigration.apply(Self.schemaSteps, to: db)
        try checkStorageRecord(adopting: adoptStorage)
        if database == nil, !(try hadAdminToken()) {
            let token = try createToken(role: .admin, label: "initial admin")
            try RepositoryDirectory.writeSecret(token + "\n", to: adminTokenPath)
        }
        if database == nil {
            // DIR/meta.sqlite is this server's alone: leases an earlier process left are void.
            try db.transaction { tx in
                try tx.run("UPDATE versions SET lease_owner = NULL, lease_until = NULL WHERE lease_owner IS NOT NULL")
                try tx.run("DELETE FROM leases")
            }
        }
        // Uploads that were processing when a server died are processed again (once their lease ran out).
        try takeOverAbandonedProcessing()
    }

    /// A name for this process in leases: `HOST:PID:RANDOM`.
    static func newInstanceID() -> String {
        var generator = SystemRandomNumberGenerator()
        let random = String(UInt64.random(in: 0...UInt64.max, using: &generator), radix: 36)
        return "\(ProcessInfo.processInfo.hostName):\(ProcessInfo.processInfo.processIdentifier):\(random)"
    }

    static func now() -> Int64 { Int64(Date().timeIntervalSince1970) }

    static func newTokenText() -> String {
        var random = [UInt8](repeating: 0, count: 32)
        var generator = SystemRandomNumberGenerator()
        for i in random.indices { random[i] = UInt8.random(in: 0...255, using: &generator) }
        return "blt_" + random.map { String(format: "%02x", $0) }.joined()
    }

    // MARK: Apps and packs

    /// Creates an app.
    /// - Parameter fourEyes: whether its release requests must be approved by another token than the one that asked.
    /// - Throws: `conflict` if it exists; `invalidPackID` for a bad ID.
    @discardableResult
    public func createApp(_ id: String, fourEyes: Bool = false) throws -> AppInfo {
        _ = try PackID(id)
        do {
            try db.transaction { tx in
                try tx.run(
                    "INSERT INTO apps(id, created, four_eyes) VALUES (?, ?, ?)",
                    [.text(id), .integer(Self.now()), .integer(fourEyes ? 1 : 0)])
                try audit(&tx, "app.create", app: id, details: ["fourEyes": String(fourEyes)])
            }
        } catch let e as BacklotError where e.code == .conflict {
            throw BacklotError(.conflict, "the app exists already", context: id)
        }
        return try app(id)
    }

    /// The IDs of every app, sorted.
    public func apps() throws -> [String] { try appList().map(\.id) }

    /// Every app, sorted by ID.
    public func appList() throws -> [AppInfo] {
        try db.read { try $0.query("SELECT * FROM apps ORDER BY id", []) }.compactMap(appInfo)
    }

    /// One app. - Throws: `notFound`.
    public func app(_ id: String) throws -> AppInfo {
        guard
            let info = try db.read({ try $0.query("SELECT * FROM apps WHERE id = ?", [.text(id)]) }).first.flatMap(
                appInfo)
        else {
            throw BacklotError(
                .notFound, "no such app", context: id, hint: "create it first: backlot apps create \(id)")
        }
        return info
    }

    /// Turns an app's four-eyes rule on or off. - Throws: `notFound`.
    @discardableResult
    public func setFourEyes(app id: String, _ on: Bool) throws -> AppInfo {
        try db.transaction { tx in
            try requireApp(&tx, id)
            try tx.run("UPDATE apps SET four_eyes = ? WHERE id = ?", [.integer(on ? 1 : 0), .text(id)])
            try audit(&tx, "app.update", app: id, details: ["fourEyes": String(on)])
        }
        return try app(id)
    }

    func appInfo(_ row: Database.Row) -> AppInfo? {
        guard let id = row["id"]?.string else { return nil }
        return AppInfo(
            id: id, created: Date(timeIntervalSince1970: Double(row["created"]?.int ?? 0)),
            fourEyes: (row["four_eyes"]?.int ?? 0) != 0, quotaBytes: quotaBytes)
    }

    func requireApp(_ tx: inout any MetadataConnection, _ app: String) throws {
        guard try !tx.query("SELECT 1 FROM apps WHERE id = ?", [.text(app)]).isEmpty else {
            throw BacklotError(
                .notFound, "no such app", context: app, hint: "create it first: backlot apps create \(app)")
        }
    }

    func requirePack(_ tx: inout any MetadataConnection, _ app: String, _ pack: String) throws {
        try requireApp(&tx, app)
        guard try !tx.query("SELECT 1 FROM packs WHERE app = ? AND id = ?", [.text(app), .text(pack)]).isEmpty else {
            throw BacklotError(
                .notFound, "no such pack", context: "\(app)/\(pack)",
                hint: "a pack is made by its first upload: backlot upload PACK --app \(app)")
        }
    }

    /// Creates a pack (ID rule as in manifests). - Throws: `conflict`, `quotaExceeded` past the pack limit.
    public func createPack(app: String, id: String) throws {
        _ = try PackID(id)
        try db.transaction { tx in
            try requireApp(&tx, app)
            let count =
                try tx.query("SELECT COUNT(*) AS n FROM packs WHERE app = ?", [.text(app)]).first?["n"]?.int ?? 0
            guard count < maximumPacksPerApp else {
                throw BacklotError(
                    .quotaExceeded, "the app has \(count) packs, the most allowed", context: app,
                    hint: "remove a pack, or raise the limit")
            }
            do {
                try tx.run(
                    "INSERT INTO packs(app, id, created) VALUES (?, ?, ?)",
                    [.text(app), .text(id), .integer(Self.now())])
            } catch let e as BacklotError where e.code == .conflict {
                throw BacklotError(.conflict, "the pack exists already", context: "\(app)/\(id)")
            }
            try audit(&tx, "pack.create", app: app, pack: id)
        }
    }

    /// The IDs of an app's packs, sorted. - Throws: `notFound` for an unknown app.
    public func packs(app: String) throws -> [String] { try packList(app: app).map(\.id) }

    /// An app's packs, sorted by ID, with their version counts and newest versions. - Throws: `notFound` for an unknown app.
    public func packList(app: String) throws -> [PackInfo] {
        try db.transaction { tx in
            try requireApp(&tx, app)
            return try tx.query(
                """
                SELECT p.id AS id, p.created AS created, COUNT(v.number) AS n, MAX(v.number) AS latest FROM packs p
                LEFT JOIN versions v ON v.app = p.app AND v.pack = p.id AND v.deleted = 0
                WHERE p.app = ? GROUP BY p.id, p.created ORDER BY p.id
                """, [.text(app)]
            ).compactMap { row in
                guard let id = row["id"]?.string else { return nil }
                return PackInfo(
                    id: id, created: Date(timeIntervalSince1970: Double(row["created"]?.int ?? 0)),
                    versions: row["n"]?.integer(as: Int.self) ?? 0, latest: row["latest"]?.integer(as: Int.self))
            }
        }
    }
}
