import BacklotBasics
import BacklotContainer
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
    /// - Throws: what ``ensureLocalAvailability(of:requireLatestVersion:)`` throws, or a trust or network error.
    public func reconcilePreferredLanguages() async throws {
        let offered = try await offered()
        let localized = offered.values.map(\.0).filter { $0.languageIdentifier != nil }
        let resolved = resolvedLanguageIdentifier(available: localized.compactMap(\.languageIdentifier))
        let wanted = localized.filter { $0.languageIdentifier == resolved }
        for pack in wanted.sorted(by: { $0.id < $1.id }) where !assetPackIsAvailableLocally(withID: pack.id) {
            try await ensureLocalAvailability(of: pack, requireLatestVersion: false)
            try recordLanguagePack(pack.id, downloaded: true)  // at once: a later failure forgets nothing
        }
        let mine = ClientContainer.decodeIDs(try container.meta(.languagePacks))
        for pack in localized where pack.languageIdentifier != resolved && mine.contains(pack.id) {
            if assetPackIsAvailableLocally(withID: pack.id) { try await remove(assetPackWithID: pack.id) }
            try recordLanguagePack(pack.id, downloaded: false)
        }
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
            return Self.spelling(of: chosen, in: available) ?? chosen
        }
        return PreferredLanguages.best(among: available, preferred: PreferredLanguages.current())
    }

    /// A language as stored: its maximal BCP-47 identifier (`fr` is `fr-Latn-FR`), so that every
    /// spelling of one language compares equal.
    static func identifier(_ language: Locale.Language) -> String { language.maximalIdentifier }

    /// Of `available` (as the manifests spell them), the one that is `chosen` (a maximal identifier).
    static func spelling(of chosen: String, in available: [String]) -> String? {
        available.sorted().first { Locale.Language(identifier: $0).maximalIdentifier == chosen }
    }

}
