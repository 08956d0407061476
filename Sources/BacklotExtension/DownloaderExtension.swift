import BacklotClient
import Foundation

/// A downloader extension (Apple's `BADownloaderExtension`): an executable the background agent
/// runs when the app is installed or updated, before it is opened, and periodically.
///
/// ```swift
/// import BacklotExtension
///
/// @main struct GameDownloader: DownloaderExtension {
///     func downloads(for request: ContentRequest, manifestURL: URL, extensionInfo: AppExtensionInfo) -> Set<URLDownload> {
///         [URLDownload(identifier: "intro", url: URL(string: "https://cdn.example.com/intro.m4v")!, fileSize: 8_000_000,
///                      isEssential: request != .periodic)]
///     }
///     func backgroundDownload(_ download: URLDownload, finishedWithFileURL fileURL: URL) {
///         try? FileManager.default.moveItem(at: fileURL, to: URL(fileURLWithPath: "/var/lib/game/intro.m4v"))
///     }
/// }
/// ```
///
/// Build it as an executable target and name it in the agent's configuration
/// (`BacklotExtensionPath`). Each call runs under the agent's time limit and daily budget; while
/// ``downloads(for:manifestURL:extensionInfo:)`` runs, no process may schedule downloads: return
/// them instead. Periodic requests may return only non-essential downloads.
public protocol DownloaderExtension {
    init()

    /// The downloads to schedule for this event. `manifestURL` is a read-only copy of the
    /// verified catalog, deleted after the call.
    func downloads(for request: ContentRequest, manifestURL: URL, extensionInfo: AppExtensionInfo) -> Set<URLDownload>

    /// A download finished while the app was not listening: move the file before returning, or it is deleted.
    func backgroundDownload(_ download: URLDownload, finishedWithFileURL fileURL: URL)

    /// A download failed while the app was not listening; it may be scheduled again here.
    func backgroundDownload(_ download: URLDownload, failedWithError error: any Error)

    /// An authentication challenge for a download (Apple's `backgroundDownload(_:didReceive:)`);
    /// the default answers `.performDefaultHandling`.
    func backgroundDownload(
        _ download: URLDownload, didReceive challenge: URLAuthenticationChallenge
    ) async -> (URLSession.AuthChallengeDisposition, URLCredential?)

    /// Apple's deprecated `extensionWillTerminate()`: never called (the agent ends an extension
    /// call by its time limit, as iOS does, without notice).
    func extensionWillTerminate()
}

extension DownloaderExtension {
    public func downloads(
        for request: ContentRequest, manifestURL: URL, extensionInfo: AppExtensionInfo
    ) -> Set<URLDownload> { [] }
    public func backgroundDownload(_ download: URLDownload, finishedWithFileURL fileURL: URL) {}
    public func backgroundDownload(_ download: URLDownload, failedWithError error: any Error) {}
    public func backgroundDownload(
        _ download: URLDownload, didReceive challenge: URLAuthenticationChallenge
    ) async -> (URLSession.AuthChallengeDisposition, URLCredential?) {
        (.performDefaultHandling, nil)
    }
    public func extensionWillTerminate() {}

    /// The executable's entry point: answers the one call the agent passes (see docs/protocol.md).
    /// It is async, so that `backgroundDownload(_:didReceive:)` is awaited as Apple's is, on any
    /// actor the extension gives it (the main actor included).
    public static func main() async {
        exit(await ExtensionHost.serve(Self(), arguments: CommandLine.arguments))
    }
}

/// An extension for managed asset packs (Apple's `ManagedDownloaderExtension`): the agent
/// downloads the essential and prefetch packs of each installation event itself; the extension
/// may only filter them out.
///
/// ```swift
/// @main struct GameDownloader: ManagedDownloaderExtension {
///     func shouldDownload(_ assetPack: AssetPack) -> Bool { assetPack.id != "HighResolutionTextures" }
/// }
/// ```
public protocol ManagedDownloaderExtension: DownloaderExtension {
    /// Whether to download this candidate pack (default: true).
    func shouldDownload(_ assetPack: AssetPack) -> Bool
}

extension ManagedDownloaderExtension {
    public func shouldDownload(_ assetPack: AssetPack) -> Bool { true }
}

public typealias BADownloaderExtension = DownloaderExtension
