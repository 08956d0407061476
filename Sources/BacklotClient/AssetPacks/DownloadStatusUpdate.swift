import Foundation

extension AssetPackManager {
    /// What happens to a download (Apple's `AssetPackManager.DownloadStatusUpdate`).
    public enum DownloadStatusUpdate: Sendable {
        case began(AssetPack)
        /// `progress.cancel()` cancels the download.
        case downloading(AssetPack, Progress)
        case paused(AssetPack)
        case finished(AssetPack)
        case failed(AssetPack, any Error)

        /// The pack the update is about.
        public var assetPack: AssetPack {
            switch self {
            case .began(let p), .downloading(let p, _), .paused(let p), .finished(let p), .failed(let p, _): p
            }
        }
    }
}
