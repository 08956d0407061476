// The 2022 Background Assets API (the seed talk background-assets-intro-2022 names it; it shows
// no code), written from Apple's documented Swift declarations of BADownloadManager,
// BADownloadManagerDelegate, BAURLDownload, BADownload, BADownloaderExtension, BAAppExtensionInfo
// and BAErrorCode, compiled against Backlot. Changed lines: `import BackgroundAssets` →
// `import BacklotClient` and `import BacklotExtension`.
import BacklotClient
import BacklotExtension

/// An app's delegate implementing every optional method.
final class EveryCallbackDelegate: BADownloadManagerDelegate {
    func downloadDidBegin(_ download: BADownload) {}
    func downloadDidPause(_ download: BADownload) {}
    func download(
        _ download: BADownload, didWriteBytes bytesWritten: Int64, totalBytesWritten: Int64,
        totalBytesExpectedToWrite totalExpectedBytes: Int64
    ) {}
    func download(
        _ download: BADownload, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        completionHandler(.performDefaultHandling, nil)
    }
    func download(_ download: BADownload, failedWithError error: any Error) {
        if let error = error as? BackgroundDownloadError, error.errorCode == .downloadWouldExceedAllowance { return }
    }
    func download(_ download: BADownload, finishedWithFileURL fileURL: URL) {
        try? FileManager.default.removeItem(at: fileURL)
    }
}

/// The async form of the challenge callback.
final class AsyncChallengeDelegate: BADownloadManagerDelegate {
    func download(
        _ download: BADownload, didReceive challenge: URLAuthenticationChallenge
    ) async -> (URLSession.AuthChallengeDisposition, URLCredential?) {
        (.cancelAuthenticationChallenge, nil)
    }
}

enum AppSide2022 {
    static func scheduleEverything(delegate: EveryCallbackDelegate) async throws {
        let manager = BADownloadManager.shared
        manager.delegate = delegate
        let request = URLRequest(url: URL(string: "https://cdn.example.com/intro.m4v")!)
        let download = BAURLDownload(
            identifier: "intro", request: request, essential: false, fileSize: 8_000_000,
            applicationGroupIdentifier: "group.com.example.game", priority: .default)
        let legacy = BAURLDownload(
            identifier: "legacy", request: request, fileSize: 10, applicationGroupIdentifier: "g")
        manager.withExclusiveControl { acquiredLock, error in
            guard acquiredLock, error == nil else { return }
            try? manager.scheduleDownload(download)
        }
        manager.withExclusiveControl(beforeDate: Date()) { acquiredLock, error in
            if acquiredLock { try? manager.scheduleDownload(legacy) }
        }
        let all: [BADownload] = try await manager.withExclusiveControl { try manager.fetchCurrentDownloads() }
        _ = try await manager.withExclusiveControl(before: Date(timeIntervalSinceNow: 5)) { all.count }
        let current = try await manager.currentDownloads
        manager.fetchCurrentDownloads { downloads, error in _ = (downloads, error) }
        for d in current where d.state == .waiting || d.state == .downloading {
            try manager.cancel(d)
        }
        try manager.startForegroundDownload(download.removingEssential())
        _ = (download.identifier, download.uniqueIdentifier, download.isEssential, download.priority)
        _ = BADownload.State.failed.rawValue + BADownload.State.finished.rawValue
        _ = BADownloaderPriority.max > BADownload.Priority.min
        _ = BAErrorCode.sessionDownloadDisallowedByDomain.rawValue
        _ = BAError.Code.downloadNotScheduled
    }
}

/// A 2022 downloader extension with every entry point.
struct EveryEntryPointExtension: BADownloaderExtension {
    func downloads(
        for request: BAContentRequest, manifestURL: URL, extensionInfo: BAAppExtensionInfo
    ) -> Set<BADownload> {
        let remaining = extensionInfo.restrictedDownloadSizeRemaining
        guard request == .install || request == .update || request == .periodic else { return [] }
        let essential = request != .periodic && remaining != nil
        return [
            BAURLDownload(
                identifier: "intro", request: URLRequest(url: URL(string: "https://cdn.example.com/intro.m4v")!),
                essential: essential, fileSize: 8_000_000, applicationGroupIdentifier: "group.com.example.game",
                priority: .max)
        ]
    }
    func backgroundDownload(
        _ download: BADownload, didReceive challenge: URLAuthenticationChallenge
    ) async -> (
        URLSession.AuthChallengeDisposition, URLCredential?
    ) {
        (.performDefaultHandling, nil)
    }
    func backgroundDownload(_ failedDownload: BADownload, failedWithError error: any Error) {
        if failedDownload.isEssential {
            try? BADownloadManager.shared.scheduleDownload(failedDownload.removingEssential())
        }
    }
    func backgroundDownload(_ finishedDownload: BADownload, finishedWithFileURL fileURL: URL) {
        try? FileManager.default.removeItem(at: fileURL)
    }
    func extensionWillTerminate() {}
}

/// The 2025 managed extension protocols.
struct ManagedExtension: ManagedDownloaderExtension {
    func shouldDownload(_ assetPack: AssetPack) -> Bool { assetPack.downloadSize < 1 << 30 }
}
struct StoreExtension: StoreDownloaderExtension {}
