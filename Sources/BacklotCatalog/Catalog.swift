import BacklotBasics
import BacklotCrypto
import BacklotFormat
import BacklotJSON
import Foundation

/// The signed list of packs released in one app's channel (`docs/protocol.md` §3).
///
/// ```swift
/// let catalog = try Catalog.verify(bytes, trusting: [pinnedKey], app: "com.example.game",
///                                  channel: .production, now: Date(), newerThan: lastSeen)
/// for entry in catalog.packs { print(entry.id, entry.release.version) }
/// ```
public struct Catalog: Sendable, Hashable {
    /// The envelope payload type of catalogs.
    public static let payloadType = "application/vnd.backlot.catalog+json"
    /// The default lifetime of a signature (see docs/protocol.md for the reasoning).
    public static let defaultLifetime: TimeInterval = 14 * 86_400
    /// `serve` re-signs when less than this is left.
    public static let resignMargin: TimeInterval = 7 * 86_400

    /// One released version of a pack: what a client needs to decide and to download.
    public struct Release: Sendable, Hashable {
        public var version: Int
        public var downloadPolicy: DownloadPolicy
        public var platforms: [Platform]
        public var userInfo: JSONNode?
        public var language: String?
        public var installSize: UInt64
        /// The archive's URL relative to the catalog, its size and the SHA-256 of the whole file.
        public var archiveURL: String
        public var archiveSize: UInt64
        public var archiveSHA256: SHA256Digest
        /// Where the index is and its SHA-256 (the pack digest).
        public var indexOffset: UInt64
        public var indexLength: UInt64
        public var indexSHA256: SHA256Digest
        /// Deltas into this release from older versions (docs/protocol.md §3), sorted by base; empty
        /// when there are none or the catalog predates them.
        public var deltas: [Delta] = []

        public init(
            version: Int, downloadPolicy: DownloadPolicy, platforms: [Platform], userInfo: JSONNode?, language: String?,
            installSize: UInt64, archiveURL: String, archiveSize: UInt64, archiveSHA256: SHA256Digest,
            indexOffset: UInt64, indexLength: UInt64, indexSHA256: SHA256Digest
        ) {
            self.version = version
            self.downloadPolicy = downloadPolicy
            self.platforms = platforms
            self.userInfo = userInfo
            self.language = language
            self.installSize = installSize
            self.archiveURL = archiveURL
            self.archiveSize = archiveSize
            self.archiveSHA256 = archiveSHA256
            self.indexOffset = indexOffset
            self.indexLength = indexLength
            self.indexSHA256 = indexSHA256
        }
    }

    /// A pack in the catalog: its release, and optionally a candidate in staged rollout.
    public struct Entry: Sendable, Hashable {
        public var id: PackID
        public var release: Release
        public var candidate: Release?
        /// Share of devices that take the candidate, in basis points (0…10000).
        public var rolloutBasisPoints: Int

        public init(id: PackID, release: Release, candidate: Release? = nil, rolloutBasisPoints: Int = 0) {
            self.id = id
            self.release = release
            self.candidate = candidate
            self.rolloutBasisPoints = rolloutBasisPoints
        }

        /// The release this device should have, by the bucketing rule.
        public func release(forDevice deviceID: String) -> Release {
            guard let candidate,
                RolloutBucket.takesCandidate(
                    deviceID: deviceID, packID: id.rawValue, version: candidate.version, basisPoints: rolloutBasisPoints
                )
            else { return release }
            return candidate
        }
    }

    public var app: String
    public var channel: Channel
    /// Only ever grows.
    public var version: UInt64
    public var issued: Date
    public var expires: Date
    /// Sorted by ID.
    public var packs: [Entry]

    public init(app: String, channel: Channel, version: UInt64, issued: Date, expires: Date, packs: [Entry]) {
        self.app = app
        self.channel = channel
        self.version = version
        self.issued = issued
        self.expires = expires
        self.packs = packs.sorted { $0.id < $1.id }
    }

    /// The next catalog version after `previous`: `max(previous + 1, Unix seconds)`.
    public static func nextVersion(after previous: UInt64, now: Date) -> UInt64 {
        max(previous + 1, UInt64(max(0, now.timeIntervalSince1970)))
    }

    /// Verifies a signed catalog and checks that it is the one expected, current, and not a rollback.
    /// - Throws: ``BacklotError/Code/untrusted`` for a bad signature, another app or channel,
    ///   an expired catalog or a version lower than `newerThan`.
    public static func verify(
        _ bytes: [UInt8], trusting keys: [Ed25519.PublicKey], app: String, channel: Channel,
        now: Date, newerThan lastSeen: UInt64? = nil, source: String
    ) throws -> Catalog {
        let payload = try SignedEnvelope.open(bytes, expecting: payloadType, trusting: keys, source: source)
        let catalog = try decode(payload, source: source)
        guard catalog.app == app, catalog.channel == channel else {
            throw BacklotError(
                .untrusted,
                "the catalog is for \(catalog.app)/\(catalog.channel.rawValue), not \(app)/\(channel.rawValue)",
                context: source, hint: "check the catalog URL")
        }
        guard catalog.expires > now else {
            throw BacklotError(
                .untrusted, "the catalog expired at \(RFC3339.string(catalog.expires))", context: source,
                hint:
                    "the server must re-sign it (`backlot catalog resign`); an old catalog may be replayed by an attacker"
            )
        }
        if let lastSeen, catalog.version < lastSeen {
            throw BacklotError(
                .untrusted, "the catalog's version \(catalog.version) is lower than \(lastSeen), already seen",
                context: source,
                hint: "this is a rollback: an older catalog is being served")
        }
        return catalog
    }
}

/// RFC 3339 timestamps in UTC with whole seconds.
public enum RFC3339 {
    public static func string(_ date: Date) -> String {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime]
        f.timeZone = TimeZone(identifier: "UTC")
        return f.string(from: date)
    }

    public static func date(_ text: String) -> Date? {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime]
        return f.date(from: text)
    }
}
