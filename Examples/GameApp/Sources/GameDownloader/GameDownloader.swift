// The game's downloader extension: the Backlot agent runs it when the game is installed or
// updated, before the player opens it, and it decides which asset packs to fetch (here: every
// pack but the high-resolution textures).
import BacklotClient
import BacklotExtension
import Foundation

@main struct GameDownloader: ManagedDownloaderExtension {
    func shouldDownload(_ assetPack: AssetPack) -> Bool {
        let container = ProcessInfo.processInfo.environment["BACKLOT_CONTAINER"] ?? "."
        let path = container + "/example.log"
        if !FileManager.default.fileExists(atPath: path) {
            _ = FileManager.default.createFile(atPath: path, contents: nil)
        }
        if let handle = FileHandle(forWritingAtPath: path) {
            handle.seekToEndOfFile()
            handle.write(Data("extension asked about \(assetPack.id)\n".utf8))
            try? handle.close()
        }
        return assetPack.id != "HighResolutionTextures"
    }
}
