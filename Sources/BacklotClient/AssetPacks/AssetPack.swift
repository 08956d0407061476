import BacklotFormat
import BacklotJSON
import Foundation

/// An asset pack as the catalog describes it (Apple's `AssetPack`).
public struct AssetPack: Sendable, Hashable, Identifiable {
    /// The pack's identifier.
    public let id: String
    /// The compressed size of the whole archive, in bytes (what a first download costs at most).
    public let downloadSize: Int
    /// The pack's release number (it may go down when a release is rolled back).
    public let version: Int
    /// The manifest's `userInfo`, as written.
    public let userInfo: JSONNode?
    /// The pack's BCP-47 language as the manifest spells it (`fr`, `pt-BR`), if it is localized.
    public let languageIdentifier: String?
    /// The language for which this pack is localized (Apple's, iOS 27); nil when it is not.
    public var language: Locale.Language? { languageIdentifier.map(Locale.Language.init(identifier:)) }
    /// When the pack is fetched.
    public let downloadPolicy: DownloadPolicy
    /// The pack digest (SHA-256 of the archive's index) of this release.
    public let digest: String

    public init(
        id: String, downloadSize: Int, version: Int, userInfo: JSONNode?, language: String?,
        downloadPolicy: DownloadPolicy, digest: String
    ) {
        self.id = id
        self.downloadSize = downloadSize
        self.version = version
        self.userInfo = userInfo
        self.languageIdentifier = language
        self.downloadPolicy = downloadPolicy
        self.digest = digest
    }
}

extension AssetPack {
    /// Apple's seven status bits.
    public struct Status: OptionSet, Sendable, Hashable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }

        /// The catalog offers the pack and it is not installed.
        public static let downloadAvailable = Status(rawValue: 1 << 0)
        /// An installed pack has a newer release in the catalog.
        public static let updateAvailable = Status(rawValue: 1 << 1)
        /// The installed pack is the catalog's release.
        public static let upToDate = Status(rawValue: 1 << 2)
        /// The installed pack is not the catalog's release.
        public static let outOfDate = Status(rawValue: 1 << 3)
        /// The installed pack is no longer in the catalog.
        public static let obsolete = Status(rawValue: 1 << 4)
        /// A download is in progress.
        public static let downloading = Status(rawValue: 1 << 5)
        /// A release of the pack is installed.
        public static let downloaded = Status(rawValue: 1 << 6)
    }
}
