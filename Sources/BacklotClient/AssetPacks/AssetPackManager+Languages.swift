import BacklotBasics
import BacklotContainer
import BacklotFormat
import BacklotJSON
import Foundation

/// Localized asset packs (Apple's iOS 27 additions): a pack whose manifest names a `language` is
/// one language's variant; the device gets the variants of the language that best matches its
/// preferences (``PreferredLanguages``), or of the one the app sets.
extension AssetPackManager {
    /// The language the app chose for its localized packs, or (when it chose none) the best match
    /// of the device's preferred languages among the languages of the packs of the catalog this
    /// manager last read; nil when no localized pack is known. Setting it (nil: back to the
    /// device's preferences) downloads or removes nothing: ``reconcilePreferredLanguages()`` does.
    ///
    /// ```swift
    /// AssetPackManager.shared.resolvedLanguage = Locale.Language(identifier: "fr")
    /// try await AssetPackManager.shared.reconcilePreferredLanguages()
    /// ```
    public nonisolated var resolvedLanguage: Locale.Language? {
        get {
            resolvedLanguageIdentifier(available: knownLanguages.withLock { $0 }).map(Locale.Language.init(identifier:))
        }
        set {
            try? container.setMeta(.resolvedLanguage, newValue.map(Self.identifier) ?? "")
        }
    }

    /// The languages of the localized packs installed now.
    public var locallyAvailableLanguages: [Locale.Language] {
        get async {
            let installed = Set(((try? container.installed()) ?? []).map(\.id))
            let offered = (try? await offered()) ?? [:]
            let ids = Set(offered.values.compactMap { installed.contains($0.0.id) ? $0.0.languageIdentifier : nil })
            return ids.sorted().map(Locale.Language.init(identifier:))
        }
    }

    /// Makes the localized packs of ``resolvedLanguage`` available (waiting for their downloads)
    /// and removes the localized packs of other languages that an earlier reconciliation
    /// downloaded; a localized pack the app downloaded itself is never removed.
    /// - Throws: ``LocalAvailabilityError`` when some packs of the language could not be made
    ///   available (the others are, and packs of other languages are removed only when none failed),
    ///   or a trust or network error.
    public func reconcilePreferredLanguages() async throws {
        try await reconcilePreferredLanguages { pack in
            try await self.ensureLocalAvailability(of: pack, requireLatestVersion: false)
        }
    }

    /// ``reconcilePreferredLanguages()``, making each pack of the language available with `ensure`
    /// (the background agent's, which applies its own download rules) instead of
    /// ``ensureLocalAvailability(of:requireLatestVersion:)``.
    /// - Throws: ``LocalAvailabilityError`` naming what `ensure` threw for each pack that failed.
    public func reconcilePreferredLanguages(
        makingAvailableWith ensure: @escaping @Sendable (AssetPack) async throws -> Void
    ) async throws {
        let offered = try await offered()
        let localized = offered.values.map(\.0).filter { $0.languageIdentifier != nil }
        let resolved = resolvedLanguageIdentifier(available: localized.compactMap(\.languageIdentifier))
        let wanted = localized.filter {
            $0.languageIdentifier == resolved && !assetPackIsAvailableLocally(withID: $0.id)
        }
        try await ensureEach(wanted) { pack in
            try await ensure(pack)
            try self.recordLanguagePack(pack.id, downloaded: true)  // at once: a later failure forgets nothing
        }
        let mine = ClientContainer.decodeIDs(try container.meta(.languagePacks))
        for pack in localized where pack.languageIdentifier != resolved && mine.contains(pack.id) {
            if assetPackIsAvailableLocally(withID: pack.id) { try await remove(assetPackWithID: pack.id) }
            try recordLanguagePack(pack.id, downloaded: false)
        }
    }

    /// A file of the installed localized packs of `language` (Apple's iOS 27
    /// `contents(at:asLocalizedFor:options:)`): the packs of other languages, and packs that are
    /// not localized, are not searched.
    ///
    /// ```swift
    /// let subtitles = try manager.contents(at: "Subtitles/intro.vtt", asLocalizedFor: Locale.Language(identifier: "fr"))
    /// ```
    /// - Throws: ``ManagedBackgroundAssetsError/fileNotFound(at:)`` when no such pack holds the file.
    public nonisolated func contents(
        at path: String, asLocalizedFor language: Locale.Language, options: Data.ReadingOptions = .mappedIfSafe
    ) throws -> Data {
        try Data(contentsOf: URL(fileURLWithPath: try resolveLocalized(path, language)), options: options)
    }

    /// An open, read-only handle of a file of the installed localized packs of `language` (Apple's
    /// iOS 27 `descriptor(for:asLocalizedFor:)`); close it with `try handle.close()`.
    /// - Throws: ``ManagedBackgroundAssetsError/fileNotFound(at:)`` when no such pack holds the
    ///   file, or the error of `open`.
    public nonisolated func descriptor(for path: String, asLocalizedFor language: Locale.Language) throws -> FileHandle
    {
        try openReadOnly(try resolveLocalized(path, language))
    }

    /// The URL of a file of the installed localized packs of `language` (Apple's iOS 27
    /// `url(for:asLocalizedFor:)`): well formed even when no such pack holds it (under the
    /// container's `missing` folder, which never exists). Do not keep it: an update moves the file.
    /// - Throws: ``ManagedBackgroundAssetsError/fileNotFound(at:)`` for a path that is not a file
    ///   path (empty, absolute, or leaving the pack with `..`).
    public nonisolated func url(for path: String, asLocalizedFor language: Locale.Language) throws -> URL {
        guard case .success(let clean) = SelectorPath.normalize(path, allowRoot: false) else {
            throw ManagedBackgroundAssetsError.fileNotFound(at: path)
        }
        if let full = try? resolveLocalized(clean, language) { return URL(fileURLWithPath: full) }
        return URL(fileURLWithPath: container.layout.missingFolder + "/" + clean)
    }

    /// Where `path` is among the installed packs localized for `language`: those of the installed
    /// language that is it, or best matches it (``PreferredLanguages/match(_:among:)``: `de` serves `de-AT`).
    nonisolated func resolveLocalized(_ path: String, _ language: Locale.Language) throws -> String {
        let installed = try container.installed().map { ($0, Self.languageIdentifier(ofMetadata: $0.metadata)) }
        let languages = Set(installed.compactMap(\.1))
        guard let chosen = PreferredLanguages.match(Self.identifier(language), among: Array(languages)) else {
            throw ManagedBackgroundAssetsError.fileNotFound(at: path)
        }
        return try resolve(path, among: installed.filter { $0.1 == chosen }.map(\.0))
    }

    /// The `language` of an installed release's stored metadata (the normalised manifest), if any.
    static func languageIdentifier(ofMetadata text: String) -> String? {
        guard let root = try? JSONReader(source: "installed metadata").read(Array(text.utf8)).root else { return nil }
        return root["language"]?.stringValue
    }

    /// Adds or removes one pack of the list of those reconciling downloaded, in one transaction
    /// (two reconciliations at once each keep their changes).
    nonisolated func recordLanguagePack(_ id: String, downloaded: Bool) throws {
        try container.updateMeta(.languagePacks) { text in
            var ids = ClientContainer.decodeIDs(text)
            if downloaded { ids.insert(id) } else { ids.remove(id) }
            return try ClientContainer.encodeIDs(ids)
        }
    }

    /// The app's choice, else the best of `available` for the device's preferred languages.
    nonisolated func resolvedLanguageIdentifier(available: [String]) -> String? {
        if let chosen = try? container.meta(.resolvedLanguage), !chosen.isEmpty {
            return PreferredLanguages.match(chosen, among: available) ?? chosen
        }
        return PreferredLanguages.best(among: available, preferred: preferredLanguages)
    }

    /// The device's preferred languages: those set with ``setPreferredLanguages(_:)``, else the
    /// environment's (``PreferredLanguages/current(environment:)``).
    public nonisolated var preferredLanguages: [String] {
        configuredLanguages.withLock { $0 } ?? PreferredLanguages.current()
    }

    /// Sets the device's preferred languages (BCP-47, most preferred first) for this manager, when
    /// the process's environment does not say them: the agent's `BacklotPreferredLanguages`. Nil
    /// goes back to the environment's. Downloads or removes nothing: ``reconcilePreferredLanguages()`` does.
    public nonisolated func setPreferredLanguages(_ languages: [String]?) {
        configuredLanguages.withLock { $0 = languages }
    }

    /// A language as stored: its maximal BCP-47 identifier (`fr` is `fr-Latn-FR`), so that every
    /// spelling of one language compares equal.
    static func identifier(_ language: Locale.Language) -> String { language.maximalIdentifier }

}
