// swift-format-ignore-file
// (Code written as Apple's 2026 documentation declares the symbols; only the imports differ.)
// Code using each iOS 26.4, 27 and 27.2 addition, written from Apple's documentation pages of
// developer.apple.com/documentation/backgroundassets and /backgroundtasks (AssetPackManager's
// manifest, status(relativeTo:), localVersion(ofAssetPackWithID:), localSize(ofAssetPackWithID:
// calculationMethod:), contents/descriptor/url(…asLocalizedFor:), the batch ensureLocalAvailability
// and its LocalAvailabilityError; AssetPackManifest's members; BAContentRequest.languageChange;
// BGTaskScheduler's submitTaskRequest), not from Backlot's sources. It compiles with these changes only:
//   `import BackgroundAssets` → `import BacklotClient` and `import BacklotExtension`;
//   `import BackgroundTasks` → `import BacklotTaskScheduler`;
//   `FilePath` arguments are written as strings (Backlot takes a `String` path, which a `FilePath`
//   literal also is on Apple's platforms), and `descriptor` returns a `FileHandle` (docs/porting.md).
import BacklotClient
import BacklotExtension
import BacklotTaskScheduler
import Foundation

enum BackgroundAssets2026 {
    /// The manifest replaces assetPack(withID:) and allAssetPacks (iOS 27).
    static func downloadTheLocalizedPacks() async throws {
        let manifest = try await AssetPackManager.shared.manifest
        print("Languages:", manifest.availableLanguages, "resolved:", manifest.resolvedLanguage as Any,
              "primary:", manifest.primaryLanguage as Any)
        do {
            try await AssetPackManager.shared.ensureLocalAvailability(of: manifest.localizedAssetPacks, requireLatestVersions: true)
        } catch let error as AssetPackManager.LocalAvailabilityError {
            for (assetPack, failure) in error.failures {
                print("\(assetPack.id) failed: \(failure)")
            }
            print("\(error.successes.count) asset packs are available")
        }
        if let tutorial = manifest.assetPack(withID: "Tutorial") {
            let status = try await AssetPackManager.shared.status(relativeTo: tutorial)
            if status.contains(.updateAvailable) {
                try await AssetPackManager.shared.ensureLocalAvailability(of: tutorial, requireLatestVersion: true)
            }
        }
        let french = Locale.Language(identifier: "fr")
        for assetPack in manifest.localizedAssetPacks(for: french) { print(assetPack.id) }
    }

    /// Reading a file of a chosen language's packs (iOS 27).
    static func readSubtitles() throws -> Data {
        let french = Locale.Language(identifier: "fr")
        let url = try AssetPackManager.shared.url(for: "Subtitles/Intro.vtt", asLocalizedFor: french)
        print(url)
        let handle = try AssetPackManager.shared.descriptor(for: "Subtitles/Intro.vtt", asLocalizedFor: french)
        try handle.close()
        return try AssetPackManager.shared.contents(at: "Subtitles/Intro.vtt", asLocalizedFor: french, options: .mappedIfSafe)
    }

    /// The installed version and size of a pack (iOS 27.2).
    static func describeInstalledPack() async throws {
        let version = try AssetPackManager.shared.localVersion(ofAssetPackWithID: "Tutorial")
        let bytes = try await AssetPackManager.shared.localSize(ofAssetPackWithID: "Tutorial", calculationMethod: .allocated)
        let logical = try await AssetPackManager.shared.localSize(ofAssetPackWithID: "Tutorial", calculationMethod: .logical)
        print("Tutorial \(version): \(bytes) bytes on disk, \(logical) bytes of files")
    }

    /// The completion-handler form of the manifest.
    static func manifestWithAHandler() {
        AssetPackManager.shared.getManifest { manifest, error in
            if let manifest { print(manifest.assetPacks.count) } else if let error { print(error) }
        }
    }

    /// A downloader extension that reads the manifest it is given and answers a language change.
    struct LanguageAwareDownloader: StoreDownloaderExtension {
        func downloads(for request: BAContentRequest, manifestURL: URL, extensionInfo: BAAppExtensionInfo) -> Set<BADownload> {
            guard let manifest = try? AssetPackManifest(contentsOf: manifestURL, appGroupID: "group.com.example.game") else { return [] }
            switch request {
            case .languageChange:
                return manifest.allDownloads(for: request)
            case .install, .update:
                return manifest.allDownloads(for: request)
            case .periodic:
                return []
            @unknown default:
                return manifest.allDownloads(for: nil)
            }
        }
        func shouldDownload(_ assetPack: AssetPack) -> Bool { true }
    }

    /// BGTaskScheduler's submitTaskRequest replaces submit(_:) (iOS 27).
    static func scheduleRefresh() async {
        let request = BGAppRefreshTaskRequest(identifier: "com.example.app.refresh")
        request.earliestBeginDate = Date(timeIntervalSinceNow: 15 * 60)
        BGTaskScheduler.shared.submitTaskRequest(request) { error in
            if let error { print("Could not schedule app refresh: \(error)") }
        }
        do {
            try await BGTaskScheduler.shared.submitTaskRequest(request)
        } catch {
            print("Could not schedule app refresh: \(error)")
        }
    }
}
