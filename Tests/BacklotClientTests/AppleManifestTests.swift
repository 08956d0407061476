import BacklotClient
import BacklotTestSupport
import Foundation
import Testing

/// Apple's iOS 26.4 and 27 additions to `AssetPackManager` against a real server: the manifest,
/// reads of a chosen language's packs, a pack's local version and size, its status relative to a
/// release, and the error of a batch that partly failed.
@Suite(.serialized) struct AppleManifestTests {
    static let fr = Locale.Language(identifier: "fr")
    static let de = Locale.Language(identifier: "de")

    @Test func theManifestNamesEveryPackItsLanguagesAndTheResolvedOne() async throws {
        let f = try ClientFixture()
        try f.publish(id: "Voice-fr", seed: 1, language: "fr")
        try f.publish(id: "Voice-de", seed: 2, language: "de")
        try f.publish(id: "Levels", seed: 3)
        let manager = try f.manager()
        manager.resolvedLanguage = Self.fr
        let manifest = try await manager.manifest
        #expect(Set(manifest.assetPacks.map(\.id)) == ["Levels", "Voice-de", "Voice-fr"])
        #expect(manifest.availableLanguages == [Self.de, Self.fr])
        #expect(manifest.resolvedLanguage == Self.fr && manifest.primaryLanguage == nil)
        #expect(manifest.localizedAssetPacks.map(\.id) == ["Voice-fr"])
        #expect(manifest.localizedAssetPacks(for: Locale.Language(identifier: "de-DE")).map(\.id) == ["Voice-de"])
        #expect(manifest.assetPack(withID: "Levels") == (try await manager.assetPack(withID: "Levels")))
        #expect(manifest.assetPack(withID: "Nope") == nil)

        // The completion-handler form gives the same manifest.
        let handed = await withCheckedContinuation { done in
            manager.getManifest { manifest, error in done.resume(returning: manifest?.assetPacks) }
        }
        #expect(handed == manifest.assetPacks)

        // Read from bytes (what an extension reads): the same packs; the catalog's archive URLs are
        // relative, so only the app's manifest knows where the archives are.
        let copy = try ClientContainer(path: f.dir.at("container")).lastVerifiedCatalog()!.json.prettyPrinted()
        let read = try BacklotClient.AssetPackManifest(from: Data(copy.utf8), appGroupID: "group.example")
        #expect(read.assetPacks == manifest.assetPacks && read.availableLanguages == manifest.availableLanguages)
        let levels = try #require(manifest.assetPack(withID: "Levels"))
        let download = try #require(manifest.archiveDownload(of: levels, essential: false))
        #expect(download.url.absoluteString.hasPrefix(f.catalogURL().scheme! + "://"))
        #expect(download.url.path.hasSuffix(".pack") && download.fileSize == UInt64(levels.downloadSize))
        #expect(read.archiveDownload(of: levels, essential: false) == nil)
        #expect(throws: (any Error).self) {
            try BacklotClient.AssetPackManifest(from: Data("[1]".utf8), appGroupID: "")
        }
    }

    @Test func filesAreReadFromTheChosenLanguagesPacksOnly() async throws {
        let f = try ClientFixture()
        let french = try f.publish(id: "Voice-fr", seed: 1, language: "fr")
        let german = try f.publish(id: "Voice-de", seed: 2, language: "de")
        try f.publish(id: "Levels", seed: 3)
        let manager = try f.manager()
        for id in ["Voice-fr", "Voice-de", "Levels"] {
            try await manager.ensureLocalAvailability(of: try await manager.assetPack(withID: id))
        }
        let path = "Levels/level1.dat"
        func source(_ root: String) throws -> Data { try Data(contentsOf: URL(fileURLWithPath: root + "/" + path)) }
        #expect(try manager.contents(at: path, asLocalizedFor: Self.fr) == source(french.source))
        #expect(
            try manager.contents(at: path, asLocalizedFor: Locale.Language(identifier: "de-AT"))
                == source(german.source))
        let handle = try manager.descriptor(for: path, asLocalizedFor: Self.de)
        #expect(try handle.readToEnd() == source(german.source))
        try handle.close()
        #expect(
            try manager.url(for: path, asLocalizedFor: Self.fr).path
                == manager.path(for: path, searchingInAssetPackWithID: "Voice-fr"))
        // No pack of that language: not found, and a URL that leads nowhere.
        let japanese = Locale.Language(identifier: "ja")
        #expect(throws: ManagedBackgroundAssetsError.self) { try manager.contents(at: path, asLocalizedFor: japanese) }
        #expect(!FileManager.default.fileExists(atPath: try manager.url(for: path, asLocalizedFor: japanese).path))
        #expect(throws: ManagedBackgroundAssetsError.self) {
            try manager.url(for: "../escape", asLocalizedFor: Self.fr)
        }
    }

    @Test func localVersionSizeAndStatusRelativeToARelease() async throws {
        let f = try ClientFixture()
        let first = try f.publish(id: "Levels", seed: 3)
        let manager = try f.manager()
        #expect(throws: ManagedBackgroundAssetsError.self) { try manager.localVersion(ofAssetPackWithID: "Levels") }
        let v1 = try await manager.assetPack(withID: "Levels")
        #expect(try await manager.status(relativeTo: v1) == [.downloadAvailable])
        try await manager.ensureLocalAvailability(of: v1)
        #expect(try manager.localVersion(ofAssetPackWithID: "Levels") == first.version)
        #expect(try await manager.status(relativeTo: v1) == [.downloaded, .upToDate])

        var expected: Int64 = 0
        let files = FileManager.default.enumerator(atPath: first.source)!
        while let name = files.nextObject() as? String {
            let attributes = try FileManager.default.attributesOfItem(atPath: first.source + "/" + name)
            if attributes[.type] as? FileAttributeType == .typeRegular {
                expected += (attributes[.size] as! NSNumber).int64Value
            }
        }
        let logical = try await manager.localSize(ofAssetPackWithID: "Levels", calculationMethod: .logical)
        let allocated = try await manager.localSize(ofAssetPackWithID: "Levels", calculationMethod: .allocated)
        #expect(logical == expected && allocated >= logical && allocated % 512 == 0)
        await #expect(throws: ManagedBackgroundAssetsError.self) {
            try await manager.localSize(ofAssetPackWithID: "Nope", calculationMethod: .logical)
        }

        try f.publish(id: "Levels", seed: 3, edit: true)
        let v2 = try await manager.assetPack(withID: "Levels")
        #expect(try await manager.status(relativeTo: v2) == [.downloaded, .outOfDate, .updateAvailable])
        // Installed at version 2, against version 1: another release, but no update.
        try await manager.ensureLocalAvailability(of: v2, requireLatestVersion: true)
        #expect(try await manager.status(relativeTo: v1) == [.downloaded, .outOfDate])
    }

    @Test func aBatchThatPartlyFailsNamesEachFailureAndKeepsTheRest() async throws {
        let f = try ClientFixture()
        try f.publish(id: "A", seed: 4)
        try f.publish(id: "B", seed: 5)
        let manager = try f.manager()
        let a = try await manager.assetPack(withID: "A")
        let b = try await manager.assetPack(withID: "B")
        // A pack the catalog does not offer (its ID changed): its install fails, A's and B's do not.
        let ghost = AssetPack(
            id: "Ghost", downloadSize: 1, version: 1, userInfo: nil, language: nil, downloadPolicy: .onDemand,
            digest: String(repeating: "0", count: 64))
        await #expect {
            try await manager.ensureLocalAvailability(of: [a, b, ghost])
        } throws: { error in
            guard let e = error as? AssetPackManager.LocalAvailabilityError else { return false }
            return e.successes == [a, b] && Set(e.failures.keys) == [ghost]
                && "\(e)".contains("1 of 3 asset packs are not available locally; Ghost:")
        }
        #expect(manager.assetPackIsAvailableLocally(withID: "A") && manager.assetPackIsAvailableLocally(withID: "B"))
    }
}
