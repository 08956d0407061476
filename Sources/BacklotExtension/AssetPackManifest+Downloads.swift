import BacklotClient
import BacklotFormat

extension BacklotClient.AssetPackManifest {
    /// The URL downloads of the packs' archive files that `contentRequest` would fetch (Apple's
    /// `allDownloads(for:)`): for `install` and `update`, the essential and prefetch packs whose
    /// policy names that event (essential ones as essential downloads); for `periodic`, the
    /// essential and prefetch packs as non-essential downloads; for `languageChange`, the localized
    /// packs of ``resolvedLanguage``; for nil, every pack. Each is named by its pack's ID.
    ///
    /// On Linux the agent installs asset packs itself (``ManagedDownloaderExtension/shouldDownload(_:)``
    /// chooses which): these downloads fetch the archive files as they are, for an extension that
    /// keeps them elsewhere (docs/porting.md).
    ///
    /// ```swift
    /// func downloads(for request: BAContentRequest, manifestURL: URL, extensionInfo: BAAppExtensionInfo) -> Set<BADownload> {
    ///     let manifest = try? AssetPackManifest(contentsOf: manifestURL, appGroupID: "group.com.example.game")
    ///     return manifest?.allDownloads(for: request) ?? []
    /// }
    /// ```
    public func allDownloads(for contentRequest: BAContentRequest?) -> Set<BADownload> {
        var out = Set<BADownload>()
        for pack in assetPacks {
            let policy = pack.downloadPolicy
            let wanted: Bool
            var essential = false
            switch contentRequest {
            case nil:
                wanted = true
                if case .essential = policy { essential = true }
            case .install?, .update?:
                let event: InstallationEventType = contentRequest == .install ? .firstInstallation : .subsequentUpdate
                wanted = policy.installationEventTypes.contains(event)
                if case .essential = policy { essential = true }
            case .periodic?:
                wanted = !policy.installationEventTypes.isEmpty
            case .languageChange?:
                wanted = localizedAssetPacks.contains(pack)
            }
            if wanted, let download = archiveDownload(of: pack, essential: essential) { out.insert(download) }
        }
        return out
    }
}
