import BacklotClient
import BacklotTestSupport
import Foundation
import Testing

/// Localized asset packs (Apple's iOS 27 additions) against a real server: the variants of the
/// resolved language are downloaded, those of another language that reconciliation downloaded are
/// removed, and a pack the app downloaded itself stays.
@Suite(.serialized) struct LocalizedPackTests {
    @Test func reconciliationFollowsTheResolvedLanguageAndKeepsWhatTheAppChose() async throws {
        let f = try ClientFixture()
        try f.publish(id: "Voice-fr", seed: 1, language: "fr")
        try f.publish(id: "Voice-de", seed: 2, language: "de")
        try f.publish(id: "Levels", seed: 3)
        let manager = try f.manager()
        #expect(try await manager.assetPack(withID: "Voice-fr").language == Locale.Language(identifier: "fr"))
        #expect(try await manager.assetPack(withID: "Levels").language == nil)

        manager.resolvedLanguage = Locale.Language(identifier: "fr")
        #expect(manager.resolvedLanguage == Locale.Language(identifier: "fr"))
        try await manager.reconcilePreferredLanguages()
        #expect(manager.assetPackIsAvailableLocally(withID: "Voice-fr"))
        #expect(
            !manager.assetPackIsAvailableLocally(withID: "Voice-de")
                && !manager.assetPackIsAvailableLocally(withID: "Levels"))
        #expect(await manager.locallyAvailableLanguages == [Locale.Language(identifier: "fr")])

        // The app downloads the German voice itself; then German is chosen: the French voice that
        // reconciliation brought goes, the German one stays; back to French, the German one still stays.
        try await manager.ensureLocalAvailability(of: try await manager.assetPack(withID: "Voice-de"))
        manager.resolvedLanguage = Locale.Language(identifier: "de")
        try await manager.reconcilePreferredLanguages()
        #expect(
            !manager.assetPackIsAvailableLocally(withID: "Voice-fr")
                && manager.assetPackIsAvailableLocally(withID: "Voice-de"))
        manager.resolvedLanguage = Locale.Language(identifier: "fr")
        try await manager.reconcilePreferredLanguages()
        #expect(
            manager.assetPackIsAvailableLocally(withID: "Voice-fr")
                && manager.assetPackIsAvailableLocally(withID: "Voice-de"))
        #expect(
            await manager.locallyAvailableLanguages == [
                Locale.Language(identifier: "de"), Locale.Language(identifier: "fr"),
            ])

        // Back to the device's preferences: one of the catalog's languages, or none.
        manager.resolvedLanguage = nil
        let preferred = PreferredLanguages.best(among: ["de", "fr"], preferred: PreferredLanguages.current())
        #expect(manager.resolvedLanguage == preferred.map(Locale.Language.init(identifier:)))
    }

    @Test func severalPacksAreMadeAvailableAtOnce() async throws {
        let f = try ClientFixture()
        try f.publish(id: "A", seed: 4)
        try f.publish(id: "B", seed: 5)
        let manager = try f.manager()
        let packs = try await manager.allAssetPacks
        try await manager.ensureLocalAvailability(of: packs)
        #expect(manager.assetPackIsAvailableLocally(withID: "A") && manager.assetPackIsAvailableLocally(withID: "B"))
        // An installed pack is used as it is (Apple's default: no update is looked for).
        try await manager.ensureLocalAvailability(of: packs, requireLatestVersions: false)
    }

    @Test func preferredLanguagesComeFromTheEnvironmentInGettextsOrder() {
        #expect(
            PreferredLanguages.current(environment: ["LANGUAGE": "fr_CA:de", "LANG": "en_US.UTF-8"]) == [
                "fr-CA", "de", "en-US",
            ])
        #expect(PreferredLanguages.current(environment: ["LC_ALL": "pt_BR.UTF-8@latin", "LANG": "en_US"]) == ["pt-BR"])
        #expect(PreferredLanguages.current(environment: ["LANG": "C.UTF-8"]).isEmpty)
        #expect(PreferredLanguages.best(among: ["de", "fr"], preferred: ["fr-CA", "de"]) == "fr")
        #expect(PreferredLanguages.best(among: ["pt-BR", "pt-PT"], preferred: ["pt-PT"]) == "pt-PT")
        #expect(PreferredLanguages.best(among: ["fr-FR"], preferred: ["fr"]) == "fr-FR")
        #expect(PreferredLanguages.best(among: ["de"], preferred: ["ja", "en"]) == nil)
    }

    @Test func aLanguageMatchesItsOwnVariantBeforeASiblingOne() {
        #expect(PreferredLanguages.match("pt-BR", among: ["pt", "pt-BR"]) == "pt-BR")
        #expect(PreferredLanguages.match("pt-Latn-BR", among: ["pt", "pt-BR"]) == "pt-BR")
        #expect(PreferredLanguages.match("zh-Hant", among: ["zh-Hans", "zh-Hant"]) == "zh-Hant")
        #expect(PreferredLanguages.match("zh-Hant-TW", among: ["zh-Hans", "zh-Hant"]) == "zh-Hant")
        #expect(PreferredLanguages.match("de-AT", among: ["de", "fr"]) == "de")
        #expect(PreferredLanguages.match("fr-Latn-FR", among: ["fr-CA"]) == "fr-CA")
        #expect(PreferredLanguages.match("FR", among: ["de", "fr"]) == "fr")
        #expect(PreferredLanguages.match("ja", among: ["de", "fr"]) == nil)
    }

    @Test func anAppsChoiceTheCatalogSpellsOtherwiseIsTheCatalogsVariant() async throws {
        let f = try ClientFixture()
        try f.publish(id: "Voice-frCA", seed: 1, language: "fr-CA")
        try f.publish(id: "Voice-de", seed: 2, language: "de")
        let manager = try f.manager()
        manager.resolvedLanguage = Locale.Language(identifier: "fr")
        let manifest = try await manager.manifest
        #expect(manifest.resolvedLanguage == Locale.Language(identifier: "fr-CA"))
        #expect(manifest.localizedAssetPacks.map(\.id) == ["Voice-frCA"])
        try await manager.reconcilePreferredLanguages()
        #expect(manager.assetPackIsAvailableLocally(withID: "Voice-frCA"))
        #expect(!manager.assetPackIsAvailableLocally(withID: "Voice-de"))
    }
}
