import BacklotBasics
import BacklotCrypto
import BacklotFormat
import BacklotJSON
import BacklotProtocol
import BacklotStore
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The published tree's signed metadata (table `catalogs`): each channel's catalog built from
/// its releases, signed and written atomically; Apple's download manifests; the deltas between
/// versions (``Publication/buildDeltas(app:pack:number:archive:)``); the signing keys and
/// their rotation; the re-signing of catalogs before they expire.
///
/// ```swift
/// try repository.publication.publish(app: "com.example.game", channel: .production)
/// let resigned = try repository.publication.resign()
/// let keyList = try repository.publication.rotateKey()
/// ```
public final class Publication: Sendable {
    let db: any MetadataDatabase
    let directory: RepositoryDirectory
    let tree: any PublishedTreeStore
    let archives: any ArchiveStore
    let audit: AuditLog
    let log: EventLog
    /// The absolute URL the published tree is reachable at (Apple's download manifests need absolute pack URLs).
    let publicURLStorage = Mutex<String?>(nil)
    /// How many earlier versions get a delta into each new one (Publication+Deltas.swift).
    let deltaBasesStorage = Mutex(Publication.defaultDeltaBases)

    init(
        db: any MetadataDatabase, directory: RepositoryDirectory, tree: any PublishedTreeStore,
        archives: any ArchiveStore, audit: AuditLog, log: EventLog
    ) {
        self.db = db
        self.directory = directory
        self.tree = tree
        self.archives = archives
        self.audit = audit
        self.log = log
    }

    /// Whether ``publish(app:channel:now:)`` runs for ``resign(margin:now:)`` (the audit trail's `catalog.resign`).
    @TaskLocal static var resigning = false

    /// Sets the absolute base URL of the published tree (`https://host/`), for Apple download manifests.
    public func setPublicURL(_ url: String) {
        publicURLStorage.withLock { $0 = url.hasSuffix("/") ? url : url + "/" }
    }

    /// The absolute base URL of the published tree, when one was set (``setPublicURL(_:)``).
    public var publicURL: String? { publicURLStorage.withLock { $0 } }

    /// The catalog's path in the published tree.
    public func catalogPath(app: String, channel: Channel) -> String {
        directory.publicTreePath + "/" + PublishedTreeLayout.catalog(app: app, channel: channel).path
    }

    /// Builds, signs and atomically publishes the catalog of one app and channel.
    ///
    /// Publications of one app and channel are serialised across every server on the database:
    /// the catalog (and Apple's manifests) are written to the tree while the transaction holds
    /// the channel's lock, and the new version is above both the one recorded and the one the
    /// tree holds, so the published version only grows, even when a server died between writing
    /// a catalog and committing it. Archives are copied into the tree first, outside the lock
    /// (they are content-addressed: copying one that a concurrent change no longer needs is
    /// harmless), and checked again under it. If PostgreSQL runs the transaction again after a
    /// serialization failure, the catalog is simply written again with a higher version.
    public func publish(app: String, channel: Channel, now: Date = Date()) throws {
        let key = try directory.signingKey()
        let relative = PublishedTreeLayout.catalog(app: app, channel: channel).path
        let copied = Set(try db.read { try Releases.channelArchives(&$0, app: app, channel: channel) })
        for sha in copied.sorted() { try linkIntoTree(sha) }
        try db.transaction { tx in
            // Catalog versions of one app and channel grow one writer at a time, across processes too.
            try tx.lockUntilCommit("backlot catalog \(app) \(channel.rawValue)")
            let rows = try Releases.catalogRows(&tx, app: app, channel: channel)
            var entries: [Catalog.Entry] = []
            var archives: [String] = []
            var apple: [AppleEntry] = []
            for row in rows {
                let pack = row.pack
                let live = Int64(row.live)
                if row.format == ArchiveFormat.appleArchive.rawValue {
                    apple.append(try self.appleEntry(&tx, app: app, pack: pack, number: live))
                    continue
                }
                let release = try self.release(&tx, app: app, pack: pack, number: live)
                archives.append(release.archiveSHA256.hex)
                var candidate: Catalog.Release? = nil
                if let c = row.candidate {
                    candidate = try self.release(&tx, app: app, pack: pack, number: Int64(c))
                    archives.append(candidate!.archiveSHA256.hex)
                }
                entries.append(
                    Catalog.Entry(
                        id: try PackID(pack), release: release, candidate: candidate,
                        rolloutBasisPoints: row.rolloutBasisPoints))
            }
            let recorded = try Self.recordedVersion(&tx, app: app, channel: channel)
            let previous = max(
                recorded, try publishedCatalogVersion(at: relative, app: app, channel: channel, key: key))
            guard previous < UInt64(Int64.max) else {
                throw BacklotError(
                    .io, "the catalog version \(previous) cannot grow any more", context: "\(app)/\(channel.rawValue)")
            }
            let version = Catalog.nextVersion(after: previous, now: now)
            let catalog = Catalog(
                app: app, channel: channel, version: version, issued: now,
                expires: now.addingTimeInterval(Catalog.defaultLifetime), packs: entries)
            try tx.run(
                """
                INSERT INTO catalogs(app, channel, version, expires) VALUES (?, ?, ?, ?)
                ON CONFLICT(app, channel) DO UPDATE SET version = excluded.version, expires = excluded.expires
                """,
                [
                    .text(app), .text(channel.rawValue),
                    .integer(
                        try CheckedInteger.convert(
                            version, to: Int64.self, "the catalog version", context: "\(app)/\(channel.rawValue)",
                            code: .io)),
                    .integer(
                        try CheckedInteger.convert(
                            catalog.expires.timeIntervalSince1970.rounded(.down), to: Int64.self,
                            "the catalog's expiry", code: .io)),
                ])
            if Self.resigning {
                try AuditLog.record(
                    &tx, .catalogResign, app: app,
                    details: [.channel: channel.rawValue, .version: String(version)], system: Caller.current == nil)
            }
            // Apple's manifests exist only for an app that ever had an .aar (then, also to empty them once its last is withdrawn).
            if try !apple.isEmpty || Uploads.hasAppleArchive(&tx, app: app) {
                try publishAppleManifests(app: app, channel: channel, entries: apple)
            }
            // Archives first, then the catalog that names them: a client never sees a catalog whose
            // archives are missing (those copied above are there: packs are never removed while live).
            for sha in archives where !copied.contains(sha) { try linkIntoTree(sha) }
            let signed = try SignedEnvelope.sign(payload: catalog.payload, type: Catalog.payloadType, with: [key])
                .encoded
            try tree.makeFolder(PublishedTreeLayout.catalogFolder(app: app, channel: channel))
            TestStopPoint.reach("publish.beforeCatalog")
            try tree.write(signed, at: relative)
            TestStopPoint.reach("publish.afterCatalog")
        }
    }

    /// The catalog version recorded for a channel (0 when none was published): what the next one must exceed.
    static func recordedVersion(_ tx: inout any MetadataConnection, app: String, channel: Channel) throws -> UInt64 {
        try tx.query(
            "SELECT version FROM catalogs WHERE app = ? AND channel = ?", [.text(app), .text(channel.rawValue)]
        ).first?["version"]?.integer(as: UInt64.self) ?? 0
    }

    /// The catalog recorded for a channel: its `version` and `expires`, nil when none was published.
    static func recordedCatalog(
        _ tx: inout any MetadataConnection, app: String, channel: Channel
    ) throws -> Database.Row? {
        try tx.query(
            "SELECT version, expires FROM catalogs WHERE app = ? AND channel = ?",
            [.text(app), .text(channel.rawValue)]
        ).first
    }

    /// what the next version must exceed.
    func publishedCatalogVersion(
        at relative: String, app: String, channel: Channel, key: Ed25519.PrivateKey
    ) throws -> UInt64 {
        guard let bytes = try tree.read(relative, atMost: 64 << 20),
            let payload = try? SignedEnvelope.open(
                bytes, expecting: Catalog.payloadType, trusting: [key.publicKey], source: relative),
            let catalog = try? Catalog.decode(payload, source: relative), catalog.app == app, catalog.channel == channel
        else { return 0 }
        return catalog.version
    }

    func release(_ tx: inout any MetadataConnection, app: String, pack: String, number: Int64) throws -> Catalog.Release
    {
        guard let v = try Uploads.storedVersion(&tx, app: app, pack: pack, number: number),
            let sha = v["archive_sha256"]?.string.flatMap(SHA256Digest.init(hex:)),
            let indexSHA = v["index_sha256"]?.string.flatMap(SHA256Digest.init(hex:)),
            let metaText = v["metadata"]?.string
        else {
            throw BacklotError(.conflict, "the version is not processed", context: "\(app)/\(pack)/\(number)")
        }
        let meta = try Self.storedMetadata(metaText, of: "\(app)/\(pack)/\(number)")
        var release = Catalog.Release(
            version: try CheckedInteger.convert(number, to: Int.self, "the stored version number", code: .io),
            downloadPolicy: meta.downloadPolicy, platforms: meta.platforms, userInfo: meta.userInfo,
            language: meta.language, installSize: v["install_size"]?.integer(as: UInt64.self) ?? 0,
            archiveURL: PublishedTreeLayout.pack(sha256: sha.hex).referenceFromCatalog,
            archiveSize: v["declared_size"]?.integer(as: UInt64.self) ?? 0, archiveSHA256: sha,
            indexOffset: v["index_offset"]?.integer(as: UInt64.self) ?? 0,
            indexLength: v["index_length"]?.integer(as: UInt64.self) ?? 0, indexSHA256: indexSHA)
        // The list is shared by every pack of these bytes, whichever app uploaded it: a catalog
        // names only deltas from versions of this pack, the only ones its devices can hold.
        let ownBases = try Uploads.indexDigests(&tx, app: app, pack: pack)
        release.deltas = catalogDeltas(into: indexSHA).filter { ownBases.contains($0.base.hex) }
        release.variants = meta.variants
        return release
    }

    /// A processed version's stored metadata (the `metadata` column: its pack's ``PackMetadata``,
    /// as processing wrote it).
    /// - Throws: ``BacklotError/Code/io`` when the stored text is not what processing wrote.
    static func storedMetadata(_ text: String, of version: String) throws -> PackMetadata {
        let json = try JSONReader(source: "metadata", allowsComments: false, allowsTrailingCommas: false).read(
            Array(text.utf8)
        ).root
        return try PackMetadata(json: json, source: version, what: "the stored metadata", code: .io)
    }

    /// Makes a blob visible at its content-addressed URL (in the folder a hard link, a copy across
    /// file systems; in a bucket an upload unless the object is there already).
    func linkIntoTree(_ sha: String) throws {
        try archives.publishBlob(sha, to: tree, at: PublishedTreeLayout.pack(sha256: sha).path, replacing: false)
    }

    /// Every (app, channel) that has a catalog or a release: a channel whose first release was
    /// committed but never published (a crash in between) is listed too, as expired, so that it is
    /// published at the next start or re-signing.
    public func publishedChannels() throws -> [(app: String, channel: Channel, expires: Date)] {
        let (catalogs, released) = try db.read { tx in
            (
                try tx.query("SELECT app, channel, expires FROM catalogs"),
                try Releases.releasedChannels(&tx)
            )
        }
        var expiries: [String: [String: Int64]] = [:]
        for r in catalogs {
            guard let app = r["app"]?.string, let channel = r["channel"]?.string else { continue }
            expiries[app, default: [:]][channel] = r["expires"]?.int ?? 0
        }
        for (app, channel) in released where expiries[app]?[channel] == nil {
            expiries[app, default: [:]][channel] = 0  // released, never published
        }
        return expiries.keys.sorted().flatMap { app in
            (expiries[app] ?? [:]).keys.sorted().compactMap { name in
                Channel(rawValue: name).map {
                    (app, $0, Date(timeIntervalSince1970: Double(expiries[app]?[name] ?? 0)))
                }
            }
        }
    }

    /// Re-signs every catalog that expires within `margin` (all of them with margin = .infinity),
    /// and publishes every channel that has a release but no catalog yet.
    @discardableResult
    public func resign(margin: TimeInterval = Catalog.resignMargin, now: Date = Date()) throws -> Int {
        var count = 0
        for c in try publishedChannels() where c.expires.timeIntervalSince(now) < margin {
            try Self.$resigning.withValue(true) { try publish(app: c.app, channel: c.channel, now: now) }
            count += 1
        }
        return count
    }
}
