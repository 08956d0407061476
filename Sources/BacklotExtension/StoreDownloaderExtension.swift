/// Apple's extension for Apple-hosted asset packs (StoreKit's `StoreDownloaderExtension`, the 2025
/// name): on Backlot the packs are hosted by `backlot serve` instead of the App Store, and the
/// agent treats it exactly as a ``ManagedDownloaderExtension``.
///
/// ```swift
/// import BacklotClient
/// import BacklotExtension
///
/// @main struct DownloaderExtension: StoreDownloaderExtension {
///     func shouldDownload(_ assetPack: AssetPack) -> Bool { true }
/// }
/// ```
public protocol StoreDownloaderExtension: ManagedDownloaderExtension {}

/// Apple's Objective-C names of the managed extension protocols.
public typealias BAManagedDownloaderExtension = ManagedDownloaderExtension
public typealias SKDownloaderExtension = StoreDownloaderExtension
