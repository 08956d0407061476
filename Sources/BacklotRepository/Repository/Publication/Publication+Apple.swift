import BacklotBasics
import BacklotFormat
import BacklotJSON
import BacklotProtocol
import BacklotStore
import Foundation

/// Apple's download manifests: the `.aar` releases of a channel, for each Apple platform.
extension Publication {
    /// An `.aar` release, as Apple's download manifest lists it.
    struct AppleEntry {
        let pack: String
        let version: Int
        let size: UInt64
        let sha256: String
        let policy: DownloadPolicy
        let platforms: [Platform]
        let userInfo: JSONNode?
    }

    func appleEntry(_ tx: inout any MetadataConnection, app: String, pack: String, number: Int64) throws -> AppleEntry {
        guard let v = try Uploads.storedVersion(&tx, app: app, pack: pack, number: number),
            let sha = v["archive_sha256"]?.string, let metaText = v["metadata"]?.string
        else {
            throw BacklotError(.conflict, "the version is not processed", context: "\(app)/\(pack)/\(number)")
        }
        let meta = try Self.storedMetadata(metaText, of: "\(app)/\(pack)/\(number)")
        return AppleEntry(
            pack: pack,
            version: try CheckedInteger.convert(number, to: Int.self, "the stored version number", code: .io),
            size: v["declared_size"]?.integer(as: UInt64.self) ?? 0, sha256: sha, policy: meta.downloadPolicy,
            platforms: meta.platforms, userInfo: meta.userInfo)
    }

    /// The folder of Apple download manifests for one app, channel and platform.
    public func appleManifestFolder(app: String, channel: Channel, platform: Platform) -> String {
        directory.publicTreePath + "/" + PublishedTreeLayout.appleFolder(app: app, channel: channel, platform: platform)
    }

    /// Writes Apple's download manifest for each Apple platform (`…/PLATFORM/manifest.json`) with each
    /// pack's archive at `…/PLATFORM/packs/ID` (the manifest's base URL + "/" + ID, as Apple requires).
    func publishAppleManifests(app: String, channel: Channel, entries: [AppleEntry]) throws {
        guard let base = publicURL else { return }
        guard try !entries.isEmpty || tree.exists(PublishedTreeLayout.appleFolder(app: app, channel: channel)) else {
            return
        }
        for platform in [Platform.iOS, .macOS, .tvOS, .visionOS] {
            let packs = PublishedTreeLayout.applePacksFolder(app: app, channel: channel, platform: platform)
            try tree.makeFolder(packs)
            var manifest = AppleDownloadManifest()
            var keep = Set<String>()
            for e in entries where e.platforms.contains(platform) {
                let file = PublishedTreeLayout.applePack(app: app, channel: channel, platform: platform, pack: e.pack)
                try archives.publishBlob(e.sha256, to: tree, at: file.path, replacing: true)
                keep.insert(e.pack)
                manifest.set(
                    AppleDownloadManifest.Entry(
                        id: e.pack, baseURL: base + packs, version: e.version,
                        downloadSize: e.size, downloadPolicy: e.policy, userInfo: e.userInfo))
            }
            try tree.write(
                Array(manifest.encoded.utf8),
                at: PublishedTreeLayout.appleManifest(app: app, channel: channel, platform: platform).path)
            for name in try tree.fileNames(in: packs) where !keep.contains(name) {
                try tree.remove(
                    PublishedTreeLayout.applePack(app: app, channel: channel, platform: platform, pack: name).path)
            }
        }
    }

}
