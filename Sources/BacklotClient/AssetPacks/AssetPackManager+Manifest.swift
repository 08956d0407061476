import BacklotBasics
import BacklotProtocol
import Foundation

/// The manifest of the catalog and what the device holds of each pack (Apple's iOS 26.4 and 27
/// additions to `AssetPackManager`).
extension AssetPackManager {
    /// The manifest of the packs available to download (Apple's iOS 27 `manifest`, which replaces
    /// ``assetPack(withID:)`` and ``allAssetPacks``): the catalog is fetched and verified.
    ///
    /// ```swift
    /// let manifest = try await AssetPackManager.shared.manifest
    /// try await AssetPackManager.shared.ensureLocalAvailability(of: manifest.localizedAssetPacks)
    /// ```
    /// - Throws: a trust or network error (``BacklotError``).
    public var manifest: AssetPackManifest {
        get async throws {
            let offered = try await offered()
            let languages = Array(Set(offered.values.compactMap(\.0.languageIdentifier)))
            let resolved = resolvedLanguageIdentifier(available: languages)
            return AssetPackManifest(
                packs: Array(offered.values), archiveURL: { try? self.archiveURL(of: $0) },
                resolvedLanguage: resolved.flatMap { PreferredLanguages.match($0, among: languages) })
        }
    }

    /// Where a release's archive is: its URL resolved against the catalog's and checked as an
    /// install checks it (same scheme, host and port; inside the published tree's packs folder).
    /// - Throws: ``BacklotError`` (`untrusted`) for a URL that leaves the tree.
    public nonisolated func archiveURL(of release: Catalog.Release) throws -> URL {
        try catalogClient.archiveURL(release)
    }

    /// The same, given to a handler on another thread (the form of Apple's Objective-C
    /// `getManifestWithCompletionHandler:`): the manifest, or nil and the error.
    public nonisolated func getManifest(
        completionHandler: @escaping @Sendable (AssetPackManifest?, (any Error)?) -> Void
    ) {
        Task {
            do { completionHandler(try await manifest, nil) } catch { completionHandler(nil, error) }
        }
    }

    /// How the installed release of a pack stands against `assetPack` (Apple's iOS 26.4
    /// `status(relativeTo:)`): `.upToDate` when it is that release, `.outOfDate` when it is another
    /// (and `.updateAvailable` too when `assetPack`'s version is the higher), `.downloadAvailable`
    /// when none is installed; with
    /// `.downloaded` and `.downloading` as ``localStatus(ofAssetPackWithID:)`` says. No network.
    public func status(relativeTo assetPack: AssetPack) async throws -> AssetPack.Status {
        var status = localStatus(ofAssetPackWithID: assetPack.id)
        if let installed = try container.installed(assetPack.id) {
            if ReleaseName.indexDigest(installed.digest) == assetPack.digest {
                status.insert(.upToDate)
            } else {
                status.insert(.outOfDate)
                if assetPack.version > installed.version { status.insert(.updateAvailable) }
            }
        } else {
            status.insert(.downloadAvailable)
        }
        return status
    }

    /// The version of the installed release of a pack (Apple's iOS 27.2 `localVersion(ofAssetPackWithID:)`).
    /// - Throws: ``ManagedBackgroundAssetsError/assetPackNotFound(withID:)`` when none is installed.
    public nonisolated func localVersion(ofAssetPackWithID assetPackID: String) throws -> Int {
        guard let installed = try container.installed(assetPackID) else {
            throw ManagedBackgroundAssetsError.assetPackNotFound(withID: assetPackID)
        }
        return installed.version
    }

    /// How a pack's size is counted (Apple's iOS 27.2 `SizeCalculationMethod`).
    public enum SizeCalculationMethod: Sendable, Hashable {
        /// The bytes of the files.
        case logical
        /// The bytes the files take on the file system (their blocks).
        case allocated
    }

    /// The size of the installed release of a pack: its files, counted by `calculationMethod`
    /// (Apple's iOS 27.2 `localSize(ofAssetPackWithID:calculationMethod:)`). A file shared with
    /// another release by a hard link counts in each.
    /// - Throws: ``ManagedBackgroundAssetsError/assetPackNotFound(withID:)`` when none is installed,
    ///   ``BacklotError`` (`io`) when its folder cannot be read.
    public func localSize(
        ofAssetPackWithID assetPackID: String, calculationMethod: SizeCalculationMethod
    ) async throws -> Int64 {
        guard let installed = try container.installed(assetPackID) else {
            throw ManagedBackgroundAssetsError.assetPackNotFound(withID: assetPackID)
        }
        let folder = container.releaseFolder(assetPackID, digest: installed.digest)
        let total = try await BlockingPool.shared.run {
            try Self.bytes(under: folder, allocated: calculationMethod == .allocated)
        }
        return Int64(clamping: total)
    }

    /// The bytes of the regular files below `folder` (links are not followed).
    static func bytes(under folder: String, allocated: Bool) throws -> UInt64 {
        var total: UInt64 = 0
        var pending = [folder]
        while let dir = pending.popLast() {
            for name in try FileSystem.entryNames(dir) {
                let path = dir + "/" + String(decoding: name, as: UTF8.self)
                guard let status = try FileSystem.linkStatus(path) else { continue }
                switch status.kind {
                case .directory: pending.append(path)
                case .regular: total &+= allocated ? status.allocatedBytes : status.size
                default: continue
                }
            }
        }
        return total
    }
}
