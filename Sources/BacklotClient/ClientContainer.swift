import BacklotBasics
import BacklotContainer
import BacklotCrypto
import BacklotStore
import Foundation

/// A client's container folder, shared by the app and the background agent:
///
/// ```
/// DIR/state.sqlite            installed packs, the last catalog version seen, the device ID, download progress
/// DIR/packs/KEY/DIGEST/       an installed release's files (read-only); KEY is derived from the pack ID
/// DIR/packs/KEY/DIGEST.partial/  a release being assembled (never read by apps)
/// ```
/// Pack IDs are never used as paths: `KEY` is the hex SHA-256 of the ID, shortened.
public struct ClientContainer: Sendable {
    public let path: String
    let db: Database
    /// Where every shared file of the container is.
    public var layout: ContainerLayout { ContainerLayout(root: path) }

    /// An installed release.
    public struct Installed: Sendable, Hashable {
        public let id: String
        public let version: Int
        public let digest: String
        public let downloadSize: Int
        public let metadata: String
        public let indexBytes: [UInt8]
    }

    /// Opens the container at `path`, creating it (its folder and `state.sqlite`) when it does not exist yet.
    public init(path: String) throws {
        let absolute = URL(fileURLWithPath: path).standardizedFileURL.path
        self.path = absolute
        let layout = ContainerLayout(root: absolute)
        try FileManager.default.createDirectory(atPath: layout.packsFolder, withIntermediateDirectories: true)
        db = try ContainerSchema.state.open(layout.stateDatabase)
        if try db.read({ try $0.query("SELECT 1 FROM meta WHERE key = 'deviceID'") }).isEmpty {
            try db.transaction { tx in
                try tx.run(
                    "INSERT INTO meta(key, value) VALUES ('deviceID', ?) ON CONFLICT(key) DO NOTHING",
                    [.text(UUID().uuidString.lowercased())])
            }
        }
    }

    /// Opens a container that exists already, for commands that read or change one (`status`,
    /// `remove`, `verify --container`, `clip handoff`), instead of creating an empty one.
    /// - Throws: ``BacklotError/Code/invalidInput`` when `path` holds no `state.sqlite`.
    public init(existingAt path: String) throws {
        try Self.requireExisting(path)
        try self.init(path: path)
    }

    /// Checks that `path` is a container (it holds `state.sqlite`) without creating anything.
    /// - Throws: ``BacklotError/Code/invalidInput`` saying so, with what to do.
    public static func requireExisting(_ path: String) throws {
        let absolute = URL(fileURLWithPath: path).standardizedFileURL.path
        guard (try? FileSystem.status(ContainerLayout(root: absolute).stateDatabase))??.kind == .regular else {
            throw BacklotError(
                .invalidInput,
                "\(path) is not a Backlot container (no state.sqlite): run fetch first or check the path",
                hint:
                    "a container is the folder given to `backlot fetch --container DIR` (or to an app's AssetPackManager)"
            )
        }
    }

    /// The device identifier, created once per container (for staged rollouts).
    public var deviceID: String {
        (try? db.read { try $0.query("SELECT value FROM meta WHERE key = 'deviceID'") })?.first?["value"]?.string ?? ""
    }

    func meta(_ key: String) throws -> String? {
        try db.read { try $0.query("SELECT value FROM meta WHERE key = ?", [.text(key)]) }.first?["value"]?.string
    }

    func setMeta(_ key: String, _ value: String) throws {
        try db.transaction { tx in
            try tx.run(
                "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                [.text(key), .text(value)])
        }
    }

    /// The folder of a pack's releases.
    public func packFolder(_ id: String) -> String { layout.packFolder(id) }

    /// Where an installed release's files are.
    public func releaseFolder(_ id: String, digest: String) -> String { packFolder(id) + "/" + digest }

    public func installed() throws -> [Installed] {
        try db.read { try $0.query("SELECT * FROM installed ORDER BY id") }.map(Self.installed)
    }

    public func installed(_ id: String) throws -> Installed? {
        try db.read { try $0.query("SELECT * FROM installed WHERE id = ?", [.text(id)]) }.first.map(Self.installed)
    }

    static func installed(_ r: Database.Row) -> Installed {
        Installed(
            id: r["id"]?.string ?? "", version: Int(r["version"]?.int ?? 0), digest: r["digest"]?.string ?? "",
            downloadSize: Int(r["download_size"]?.int ?? 0), metadata: r["metadata"]?.string ?? "{}",
            indexBytes: { if case .blob(let b)? = r["index_bytes"] { b } else { [] } }())
    }

    func markInstalled(
        id: String, version: Int, digest: String, downloadSize: Int, metadata: String, indexBytes: [UInt8]
    ) throws {
        try db.transaction { tx in
            try tx.run(
                """
                INSERT INTO installed(id, version, digest, download_size, metadata, index_bytes, installed) VALUES (?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT(id) DO UPDATE SET version = excluded.version, digest = excluded.digest, download_size = excluded.download_size,
                metadata = excluded.metadata, index_bytes = excluded.index_bytes, installed = excluded.installed
                """,
                [
                    .text(id), .integer(Int64(version)), .text(digest), .integer(Int64(downloadSize)), .text(metadata),
                    .blob(indexBytes),
                    .integer(Int64(Date().timeIntervalSince1970)),
                ])
            try tx.run("DELETE FROM chunks_done WHERE digest = ?", [.text(digest)])
        }
    }

    /// Checks every installed file of the container at `path` against its SHA-256.
    /// - Returns: the damaged or missing files, as "PACK: path".
    /// - Throws: ``BacklotError/Code/invalidInput`` when `path` is not a container.
    public static func verify(path: String) throws -> [String] {
        let container = try ClientContainer(existingAt: path)
        var damaged: [String] = []
        for installed in try container.installed() {
            guard let (_, index) = PackInstaller.decodeStored(installed.indexBytes) else {
                damaged.append("\(installed.id): (its stored index)")
                continue
            }
            let folder = container.releaseFolder(installed.id, digest: installed.digest)
            // A file replaced by a link (or anything but a regular file) is damaged, whatever it points at.
            for file in index.files
            where (try? FileSystem.linkStatus(folder + "/" + file.path))??.kind != .regular
                || (try? SHA256.hash(fileAt: folder + "/" + file.path)) != file.digest
            {
                damaged.append("\(installed.id): \(file.path)")
            }
        }
        return damaged
    }

    // MARK: The request queue (processes that are not the executor)

    /// Queues a request for the executor; returns its number.
    func enqueue(client: String, pack: String) throws -> Int64 {
        try db.transaction { tx in
            try tx.run(
                "INSERT INTO requests(client, pack, created) VALUES (?, ?, ?)",
                [.text(client), .text(pack), .integer(Int64(Date().timeIntervalSince1970))])
            return tx.lastInsertRowID
        }
    }

    /// Takes the oldest queued request (the executor calls this).
    func takeRequest() throws -> (id: Int64, client: String, pack: String)? {
        try db.transaction { tx in
            guard let r = try tx.query("SELECT * FROM requests ORDER BY id LIMIT 1").first, let id = r["id"]?.int else {
                return nil
            }
            try tx.run("DELETE FROM requests WHERE id = ?", [.integer(id)])
            return (id, r["client"]?.string ?? "", r["pack"]?.string ?? "")
        }
    }

    /// Withdraws a queued request (a waiting process that becomes the executor does its own work).
    func withdraw(request id: Int64) throws -> Bool {
        try db.transaction { tx in try tx.run("DELETE FROM requests WHERE id = ?", [.integer(id)]) == 1 }
    }

    /// Records the outcome of a client's queued fetch.
    func post(client: String, pack: String, outcome: FetchOutcome) throws {
        let detail = try outcome.encoded()
        try db.transaction { tx in
            try tx.run(
                "INSERT INTO events(client, pack, kind, detail) VALUES (?, ?, ?, ?)",
                [.text(client), .text(pack), .text(outcome.kind), .text(detail)])
        }
    }

    /// Claims the next undelivered event for a client and pack: each event is delivered exactly once.
    func claim(client: String, pack: String) throws -> FetchOutcome? {
        try db.transaction { tx in
            guard
                let r = try tx.query(
                    "SELECT * FROM events WHERE client = ? AND pack = ? AND delivered = 0 ORDER BY seq LIMIT 1",
                    [.text(client), .text(pack)]
                ).first, let seq = r["seq"]?.int
            else { return nil }
            guard try tx.run("UPDATE events SET delivered = 1 WHERE seq = ? AND delivered = 0", [.integer(seq)]) == 1
            else { return nil }
            return FetchOutcome.decoded(r["detail"]?.string ?? "")
        }
    }

    /// Removes an installed pack and its files.
    /// - Throws: ``ManagedBackgroundAssetsError/assetPackNotFound(withID:)`` when it is not installed.
    public func remove(_ id: String) throws {
        guard let installed = try installed(id) else {
            throw ManagedBackgroundAssetsError.assetPackNotFound(withID: id)
        }
        try removeInstalled(id)
        PackInstaller.removeRelease(releaseFolder(id, digest: installed.digest))
    }

    func removeInstalled(_ id: String) throws {
        try db.transaction { tx in try tx.run("DELETE FROM installed WHERE id = ?", [.text(id)]) }
    }

    func doneChunks(_ digest: String) throws -> Set<Int> {
        Set(
            try db.read { try $0.query("SELECT chunk FROM chunks_done WHERE digest = ?", [.text(digest)]) }.compactMap {
                $0["chunk"]?.int.map(Int.init)
            })
    }

    func recordChunks(_ digest: String, _ chunks: [Int]) throws {
        guard !chunks.isEmpty else { return }
        try db.transaction { tx in
            for c in chunks {
                try tx.run(
                    "INSERT OR IGNORE INTO chunks_done(digest, chunk) VALUES (?, ?)",
                    [.text(digest), .integer(Int64(c))])
            }
        }
    }
}
