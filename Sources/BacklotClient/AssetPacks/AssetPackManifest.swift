import BacklotBasics
import BacklotFormat
import BacklotProtocol
import Foundation

/// The asset packs a channel's catalog offers, and their languages (Apple's `AssetPackManifest`,
/// iOS 26; its language members are iOS 27's).
///
/// An app gets the manifest of its catalog from ``AssetPackManager/manifest``; a downloader
/// extension reads the copy the agent hands it (`manifestURL`) with ``init(contentsOf:appGroupID:)``.
///
/// ```swift
/// let manifest = try await AssetPackManager.shared.manifest
/// for pack in manifest.localizedAssetPacks { print(pack.id) }   // the packs of the device's language
/// if let levels = manifest.assetPack(withID: "Levels") {
///     try await AssetPackManager.shared.ensureLocalAvailability(of: levels)
/// }
/// ```
public struct AssetPackManifest: Sendable, Hashable {
    /// Where a pack's archive is, and its size (what ``allDownloads(for:)`` downloads).
    struct Archive: Sendable, Hashable {
        let url: URL
        let size: UInt64
    }

    /// Every pack the catalog offers this device and platform (for a device in a staged rollout's
    /// share, the candidate release).
    public let assetPacks: Set<AssetPack>
    /// The language the catalog's localized packs fall back to (App Store Connect's primary
    /// language on Apple's platforms). A Backlot catalog names none: nil.
    public let primaryLanguage: Locale.Language?
    /// The languages of the localized packs, in identifier order.
    public let availableLanguages: [Locale.Language]
    /// The language whose localized packs this device gets: the app's choice
    /// (``AssetPackManager/resolvedLanguage``), else the best match of the device's preferred
    /// languages (``PreferredLanguages``) among ``availableLanguages``; nil when none matches.
    public let resolvedLanguage: Locale.Language?
    /// The packs' archives by ID, at absolute URLs the catalog's checks allowed.
    let archives: [String: Archive]
    /// ``resolvedLanguage`` as the catalog spells it.
    let resolvedIdentifier: String?

    /// - Parameters:
    ///   - archiveURL: where a release's archive is, or nil when it may not be downloaded.
    ///   - resolvedLanguage: the resolved language, as the catalog spells it.
    init(
        packs: [(AssetPack, Catalog.Release)], archiveURL: (Catalog.Release) -> URL?, resolvedLanguage: String?
    ) {
        assetPacks = Set(packs.map(\.0))
        primaryLanguage = nil
        let languages = Set(packs.compactMap(\.0.languageIdentifier)).sorted()
        availableLanguages = languages.map(Locale.Language.init(identifier:))
        resolvedIdentifier = resolvedLanguage
        self.resolvedLanguage = resolvedLanguage.map(Locale.Language.init(identifier:))
        var archives: [String: Archive] = [:]
        for (pack, release) in packs {
            if let url = archiveURL(release) { archives[pack.id] = Archive(url: url, size: release.archiveSize) }
        }
        self.archives = archives
    }

    /// Reads a manifest file: the catalog copy the agent hands a downloader extension
    /// (`downloads(for:manifestURL:extensionInfo:)`), whose archive URLs the agent checked and made
    /// absolute (an archive whose URL is not an absolute http(s) URL gets no download). Each pack is
    /// its live release (which device is in a staged rollout's share only the app's
    /// ``AssetPackManager/manifest`` knows), for this platform (Linux). ``resolvedLanguage`` is the
    /// agent's (`BACKLOT_RESOLVED_LANGUAGE`, which it gives the extension), else the best match of
    /// the preferred languages of the environment.
    ///
    /// ```swift
    /// let manifest = try AssetPackManifest(contentsOf: manifestURL, appGroupID: "group.com.example.game")
    /// ```
    /// - Parameter appGroupID: the app group of the app's shared container on Apple's platforms;
    ///   on Linux the container is the agent's, and the value is not used.
    /// - Throws: ``BacklotError`` (`io`) when the file cannot be read, (`invalidInput`) when it is
    ///   not a catalog.
    public init(contentsOf url: URL, appGroupID: String) throws {
        let data: Data
        do { data = try Data(contentsOf: url) } catch {
            throw BacklotError(.io, "the manifest cannot be read: \(error.localizedDescription)", context: url.path)
        }
        try self.init(bytes: Array(data), source: url.path, appGroupID: appGroupID)
    }

    /// Reads a manifest from its bytes (as ``init(contentsOf:appGroupID:)``).
    /// - Throws: ``BacklotError`` (`invalidInput`) when the bytes are not a catalog.
    public init(from data: Data, appGroupID: String) throws {
        try self.init(bytes: Array(data), source: "manifest", appGroupID: appGroupID)
    }

    private init(bytes: [UInt8], source: String, appGroupID: String) throws {
        let catalog = try Catalog.decode(bytes, source: source)
        let packs = catalog.packs.compactMap { entry -> (AssetPack, Catalog.Release)? in
            guard entry.release.platforms.contains(.linux) else { return nil }
            return (AssetPackManager.pack(entry.id.rawValue, entry.release), entry.release)
        }
        let available = Array(Set(packs.compactMap(\.0.languageIdentifier)))
        let environment = ProcessInfo.processInfo.environment
        let resolved =
            environment[Self.resolvedLanguageEnvironmentKey].flatMap { PreferredLanguages.match($0, among: available) }
            ?? PreferredLanguages.best(
                among: available, preferred: PreferredLanguages.current(environment: environment))
        self.init(packs: packs, archiveURL: Self.absoluteHTTPURL, resolvedLanguage: resolved)
    }

    /// The variable in which the agent gives a downloader extension the language it resolved.
    public static let resolvedLanguageEnvironmentKey = "BACKLOT_RESOLVED_LANGUAGE"

    /// A release's archive URL when it is an absolute http(s) URL with a host (what the agent writes).
    static func absoluteHTTPURL(_ release: Catalog.Release) -> URL? {
        guard let url = URL(string: release.archiveURL), url.scheme == "https" || url.scheme == "http",
            url.host?.isEmpty == false
        else { return nil }
        return url
    }

    /// The pack with this ID, or nil when the catalog does not offer it.
    public func assetPack(withID id: String) -> AssetPack? {
        assetPacks.first { $0.id == id }
    }

    /// The localized packs of ``resolvedLanguage`` (empty when it is nil): the packs that
    /// ``AssetPackManager/reconcilePreferredLanguages()`` makes available.
    public var localizedAssetPacks: Set<AssetPack> {
        guard let resolvedIdentifier else { return [] }
        return assetPacks.filter { $0.languageIdentifier == resolvedIdentifier }
    }

    /// The localized packs of the catalog's language that is `language`, or best matches it
    /// (``PreferredLanguages/match(_:among:)``: the packs of `de` for `de-AT`); empty when none does.
    public func localizedAssetPacks(for language: Locale.Language) -> Set<AssetPack> {
        let available = Array(Set(assetPacks.compactMap(\.languageIdentifier)))
        guard let chosen = PreferredLanguages.match(language.maximalIdentifier, among: available) else { return [] }
        return assetPacks.filter { $0.languageIdentifier == chosen }
    }

    /// The URL download of a pack's archive file (named by the pack's ID), when its URL is known.
    public func archiveDownload(of pack: AssetPack, essential: Bool) -> URLDownload? {
        guard let archive = archives[pack.id] else { return nil }
        return URLDownload(
            identifier: pack.id, url: archive.url, fileSize: archive.size, isEssential: essential, priority: 0)
    }
}
