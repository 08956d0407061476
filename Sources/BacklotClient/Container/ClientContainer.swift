import BacklotBasics
import BacklotContainer
import BacklotCrypto
import Foundation

/// A client's container folder, shared by the app and the background agent:
///
/// ```
/// DIR/state.sqlite            installed packs, the last catalog version seen, the device ID, download progress
/// DIR/packs/KEY/DIGEST/       an installed release's files (read-only); KEY is derived from the pack ID
/// DIR/packs/KEY/DIGEST.partial/  a release being assembled (never read by apps)
/// DIR/packs/KEY/DIGEST.index.partial  its header and index, kept on disk until it is recorded
/// ```
/// Pack IDs are never used as paths: `KEY` is the hex SHA-256 of the ID, shortened.
public struct ClientContainer: Sendable {
    public let path: String
    /// The container's `state.sqlite`, through its typed operations.
    let store: StateStore
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
        try FileSystem.makeDirectories(layout.packsFolder)
        store = try StateStore(layout: layout)
        if try store.read({ try $0.value(forKey: .deviceID) }) == nil {
            try store.transaction { tx in try tx.setValueIfMissing(UUID().uuidString.lowercased(), forKey: .deviceID) }
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
        ((try? store.read { try $0.value(forKey: .deviceID) }) ?? nil) ?? ""
    }

    func meta(_ key: StateKey) throws -> String? {
        try store.read { try $0.value(forKey: key) }
    }

    func setMeta(_ key: StateKey, _ value: String) throws {
        try store.transaction { tx in try tx.setValue(value, forKey: key) }
    }

    /// Changes a meta value in one transaction: `change` gets the value stored (nil when none).
    func updateMeta(_ key: StateKey, _ change: (String?) throws -> String) throws {
        try store.transaction { tx in try tx.setValue(try change(try tx.value(forKey: key)), forKey: key) }
    }

    /// The folder of a pack's releases.
    public func packFolder(_ id: String) -> String { layout.packFolder(id) }

    /// Where an installed release's files are.
    public func releaseFolder(_ id: String, digest: String) -> String { packFolder(id) + "/" + digest }

    /// Where the header and index of a release being installed wait for the commit that records
    /// them in the container's database (an install of 200,000 files does not hold 12 MB of them in
    /// memory meanwhile). Removed with the release's other unfinished attempts.
    func pendingIndexFile(_ id: String, digest: String) -> String {
        releaseFolder(id, digest: digest) + ".index.partial"
    }

    public func installed() throws -> [Installed] {
        try store.read { try $0.installedReleases() }.compactMap(Self.installed)
    }

    /// Each installed release as `PACK/DIGEST`, sorted, without reading their indexes.
    public func installedNames() throws -> [String] {
        try store.read { try $0.installedReleaseNames() }.filter { ReleaseName.isWellFormed($0.digest) }.map {
            "\($0.id)/\($0.digest)"
        }
    }

    public func installed(_ id: String) throws -> Installed? {
        try store.read { try $0.installedRelease(id) }.flatMap(Self.installed)
    }

    /// A stored release (another process may have written it): its numbers are converted checked
    /// (0 when out of range, as for a row of the wrong shape), and a row whose release name is
    /// not one (``ReleaseName/isWellFormed(_:)``: it names the folder an update removes) is not
    /// an installed release: nil, so the pack is installed again and the row replaced.
    static func installed(_ r: InstalledRelease) -> Installed? {
        guard ReleaseName.isWellFormed(r.digest) else { return nil }
        return Installed(
            id: r.id, version: Int(exactly: r.version) ?? 0, digest: r.digest,
            downloadSize: Int(exactly: r.downloadSize) ?? 0, metadata: r.metadata, indexBytes: r.indexBytes)
    }

    func markInstalled(
        id: String, version: Int, digest: String, downloadSize: Int, metadata: String, indexBytes: [UInt8]
    ) throws {
        let release = InstalledRelease(
            id: id, version: Int64(version), digest: digest, downloadSize: Int64(downloadSize), metadata: metadata,
            indexBytes: indexBytes, installedAt: Int64(Date().timeIntervalSince1970))
        try store.transaction { tx in try tx.recordInstalled(release) }
    }

    /// ``markInstalled(id:version:digest:downloadSize:metadata:indexBytes:)`` with the index's
    /// `indexLength` bytes written by `fill` a piece at a time (never whole in memory); what
    /// `fill` throws records nothing.
    func markInstalled(
        id: String, version: Int, digest: String, downloadSize: Int, metadata: String, indexLength: Int,
        fill: (UnsafeMutableRawBufferPointer) throws -> Int
    ) throws {
        let release = InstalledRelease(
            id: id, version: Int64(version), digest: digest, downloadSize: Int64(downloadSize), metadata: metadata,
            indexBytes: [], installedAt: Int64(Date().timeIntervalSince1970))
        try store.transaction { tx in try tx.recordInstalled(release, indexLength: indexLength, fill: fill) }
    }

    /// The switch every install ends with, whatever brought its files (a download, a repair, a
    /// release adopted from another container), under the pack's install lock: `partial` becomes
    /// the release folder of `digest` with one rename (readers see the old release until then),
    /// `record` records it in the database, and then the release it replaced and every unfinished
    /// attempt at another release (`*.partial`) are removed.
    /// - Throws: what the rename and `record` throw (the old release is still recorded then).
    func switchRelease(
        _ id: String, digest: String, from partial: String, replacing previous: Installed?,
        record: () throws -> Void
    ) throws {
        let folder = releaseFolder(id, digest: digest)
        if FileSystem.exists(folder) { PackInstaller.removeRelease(folder) }
        try SystemCall.retrying("rename", path: folder) { rename(partial, folder) }
        FileSystem.syncDirectory(packFolder(id))
        try record()
        if let previous, previous.digest != digest {
            PackInstaller.removeRelease(releaseFolder(id, digest: previous.digest))
        }
        for name in (try? FileSystem.entryNames(packFolder(id))) ?? [] {
            let entry = String(decoding: name, as: UTF8.self)
            if entry.hasSuffix(".partial") { PackInstaller.removeRelease(packFolder(id) + "/" + entry) }
        }
    }

    /// Checks every installed file of the container at `path` against its SHA-256.
    /// - Returns: the damaged or missing files, as "PACK: path".
    /// - Throws: ``BacklotError/Code/invalidInput`` when `path` is not a container.
    public static func verify(path: String) throws -> [String] {
        let container = try ClientContainer(existingAt: path)
        var damaged: [String] = []
        for installed in try container.installed() {
            guard let (_, index) = PackInstaller.decodeStored(installed.indexBytes, name: installed.digest) else {
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
        try store.transaction { tx in
            try tx.enqueueRequest(client: client, pack: pack, created: Int64(Date().timeIntervalSince1970))
        }
    }

    /// Takes the oldest queued request (the executor calls this).
    func takeRequest() throws -> (id: Int64, client: String, pack: String)? {
        try store.transaction { tx in try tx.takeOldestRequest() }.map { ($0.id, $0.client, $0.pack) }
    }

    /// Withdraws a queued request (a waiting process that becomes the executor does its own work).
    func withdraw(request id: Int64) throws -> Bool {
        try store.transaction { tx in try tx.deleteRequest(id) }
    }

    /// Records the outcome of a client's queued fetch.
    func post(client: String, pack: String, outcome: FetchOutcome) throws {
        let detail = try outcome.encoded()
        try store.transaction { tx in
            try tx.postRequestOutcome(client: client, pack: pack, kind: outcome.kind, detail: detail)
        }
    }

    /// Claims the next undelivered event for a client and pack: each event is delivered exactly once.
    func claim(client: String, pack: String) throws -> FetchOutcome? {
        try store.transaction { tx in try tx.claimRequestOutcome(client: client, pack: pack) }.map(
            FetchOutcome.decoded)
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
        try store.transaction { tx in try tx.deleteInstalled(id) }
    }

    func doneChunks(_ digest: String) throws -> Set<Int> {
        Set(try store.read { try $0.doneChunks(digest) }.compactMap { Int(exactly: $0) })
    }

    func recordChunks(_ digest: String, _ chunks: [Int]) throws {
        guard !chunks.isEmpty else { return }
        try store.transaction { tx in try tx.recordDoneChunks(digest, chunks.map(Int64.init)) }
    }
}
