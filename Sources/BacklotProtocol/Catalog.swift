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
        /// The texture formats and device tiers the pack's files come in (`docs/format.md` §3.2), as
        /// its index's metadata says; nil when every file is for every device. A client picks its
        /// variant from these before it reads the index.
        public var variants: PackVariants?

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

/// RFC 3339 timestamps with whole seconds (`2026-12-03T09:41:00Z`), written in UTC.
///
/// Read and written by hand rather than with `ISO8601DateFormatter`, which costs an ICU formatter
/// per call: a device reads two timestamps at each catalog check, the server writes them for every
/// answer, and the fuzz harness of catalogs ran at a third of its speed for it.
public enum RFC3339 {
    /// `date` in UTC, its fraction of a second dropped.
    public static func string(_ date: Date) -> String {
        let seconds = Int64(date.timeIntervalSince1970.rounded(.down))
        let (days, secondOfDay) = floorDivide(seconds, 86_400)
        let (year, month, day) = CivilDate.date(fromDays: days)
        func two(_ v: Int64) -> String { v < 10 ? "0\(v)" : "\(v)" }
        let y = String(year)
        let paddedYear = year >= 0 && year < 1000 ? String(repeating: "0", count: 4 - y.count) + y : y
        return
            "\(paddedYear)-\(two(month))-\(two(day))T\(two(secondOfDay / 3600)):\(two(secondOfDay / 60 % 60)):\(two(secondOfDay % 60))Z"
    }

    /// The moment `text` names: `YYYY-MM-DDTHH:MM:SS` then `Z` or an offset `±HH:MM`; nil for
    /// anything else (a fraction of a second, a date that does not exist, an hour past 23).
    public static func date(_ text: String) -> Date? {
        let b = Array(text.utf8)
        guard b.count == 20 || b.count == 25 else { return nil }
        func number(_ range: Range<Int>) -> Int64? {
            var v: Int64 = 0
            for i in range {
                guard b[i] >= 0x30, b[i] <= 0x39 else { return nil }
                v = v * 10 + Int64(b[i] - 0x30)
            }
            return v
        }
        guard b[4] == 0x2D, b[7] == 0x2D, b[10] == 0x54, b[13] == 0x3A, b[16] == 0x3A,
            let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
            let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19),
            (1...12).contains(month), day >= 1, day <= CivilDate.daysIn(month: month, year: year),
            hour <= 23, minute <= 59, second <= 59
        else { return nil }
        var offset: Int64 = 0
        if b.count == 20 {
            guard b[19] == 0x5A else { return nil }
        } else {
            guard b[19] == 0x2B || b[19] == 0x2D, b[22] == 0x3A, let oh = number(20..<22), let om = number(23..<25),
                oh <= 23, om <= 59
            else { return nil }
            offset = (oh * 3600 + om * 60) * (b[19] == 0x2B ? 1 : -1)
        }
        let seconds =
            CivilDate.days(fromYear: year, month: month, day: day) * 86_400 + hour * 3600 + minute * 60 + second
            - offset
        return Date(timeIntervalSince1970: TimeInterval(seconds))
    }

    private static func floorDivide(_ a: Int64, _ b: Int64) -> (Int64, Int64) {
        let q = a / b
        let r = a % b
        return r < 0 ? (q - 1, r + b) : (q, r)
    }
}
