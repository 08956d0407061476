// The downloader extension of the seed talk managed-background-assets-2025 (« Créer une extension
// de téléchargement »), as written there. Changed lines, and only these:
//   `import BackgroundAssets`     → `import BacklotClient`
//   `import ExtensionFoundation`  → `import BacklotExtension`
//   `import StoreKit`             → (removed: StoreDownloaderExtension is in BacklotExtension)
import BacklotClient
import BacklotExtension

@main
struct DownloaderExtension: StoreDownloaderExtension {
    func shouldDownload(_ assetPack: AssetPack) -> Bool {
        return true
    }
}
