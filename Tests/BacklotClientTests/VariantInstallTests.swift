import BacklotBasics
import BacklotClient
import BacklotCrypto
import BacklotFormat
import BacklotProtocol
import BacklotTestSupport
import Foundation
import Testing

/// A pack with texture-format and device-tier variants, published through a real server and
/// installed by devices of different profiles: each gets only its variant's files and the shared
/// ones, and a device whose profile changes installs the other variant reusing every shared chunk.
@Suite(.serialized) struct VariantInstallTests {
    /// Publishes "Game": shared levels, ASTC and ETC2 textures (the manifest's variants), and
    /// Play's `#tier_0`/`#tier_2` music folders. Random bytes, so sizes are what is downloaded.
    func publish(_ f: ClientFixture) throws -> TemporaryDirectory {
        let src = TemporaryDirectory(existing: f.dir.at("src-game"))
        var g = SeededGenerator(seed: 11)
        try src.write("src/Levels/common.dat", g.bytes(200_000))
        try src.write("src/Textures/ASTC/rock.ktx", g.bytes(120_000))
        try src.write("src/Textures/ETC2/rock.ktx", g.bytes(100_000))
        try src.write("src/Music#tier_0/theme.ogg", g.bytes(60_000))
        try src.write("src/Music#tier_2/theme.ogg", g.bytes(90_000))
        let manifest = """
            {"assetPackID": "Game", "downloadPolicy": {"onDemand": {}}, "platforms": ["linux"],
             "fileSelectors": [{"directory": "Levels"}, {"filePattern": "Music*/*"}],
             "variants": {"textureFormat": {"default": "etc2",
                "astc": [{"directorySource": "Textures/ASTC", "directoryDestination": "Textures"}],
                "etc2": [{"directorySource": "Textures/ETC2", "directoryDestination": "Textures"}]}}}
            """
        let path = try SamplePack.build(in: src, manifestJSON: manifest, averageChunkSize: 16 << 10)
        try f.repository.apps.createPack(app: f.app, id: "Game")
        let v = try f.repository.uploads.uploadAndProcess(
            app: f.app, pack: "Game", bytes: Array(try Data(contentsOf: URL(fileURLWithPath: path))))
        try f.repository.releases.release(app: f.app, pack: "Game", version: v.number, channel: .internal)
        return src
    }

    func manager(_ f: ClientFixture, _ profile: String, container: String = "device") throws -> AssetPackManager {
        var configuration = AssetPackManager.Configuration(
            containerPath: f.dir.at(container), catalogURL: f.catalogURL(), app: f.app, channel: .internal,
            trustedKeys: [f.pinned], platform: .linux)
        configuration.deviceProfile = try DeviceProfile(parsing: profile)
        configuration.sendsReports = false
        return try AssetPackManager(configuration: configuration)
    }

    /// The installed files of "Game" in a container, by path, with their SHA-256.
    func installed(_ f: ClientFixture, container: String = "device") throws -> [String: SHA256Digest] {
        let c = try ClientContainer(path: f.dir.at(container))
        let release = try #require(try c.installed("Game"))
        let folder = c.releaseFolder("Game", digest: release.digest)
        var out: [String: SHA256Digest] = [:]
        for case let p as String in FileManager.default.enumerator(atPath: folder)!
        where (try? FileSystem.status(folder + "/" + p))??.kind == .regular {
            out[p] = try SHA256.hash(fileAt: folder + "/" + p)
        }
        return out
    }

    @Test func eachProfileInstallsItsVariantAndAProfileChangeReusesTheSharedChunks() async throws {
        let f = try ClientFixture()
        let src = try publish(f)
        func digest(_ p: String) throws -> SHA256Digest { SHA256.hash(try src.read("src/" + p)) }

        // The catalog lists the variants, signed.
        let catalog = try Catalog.verify(
            Array(
                try Data(
                    contentsOf: URL(
                        fileURLWithPath: f.repository.publication.catalogPath(app: f.app, channel: .internal)))),
            trusting: [f.pinned], app: f.app, channel: .internal, now: Date(), source: "catalog")
        let release = try #require(catalog.packs.first { $0.id.rawValue == "Game" }).release
        #expect(release.variants?.textureFormats == ["astc", "etc2"] && release.variants?.deviceTiers == [0, 2])
        #expect(try f.repository.uploads.version(app: f.app, pack: "Game", number: 1).variants == release.variants)

        // A high-tier ASTC device: the shared level, the ASTC texture, tier 2's music; nothing else.
        let high = try manager(f, "textureFormat=astc+etc2,deviceTier=high")
        let first = try await high.fetch(packWithID: "Game")
        #expect(
            try installed(f) == [
                "Levels/common.dat": try digest("Levels/common.dat"),
                "Textures/rock.ktx": try digest("Textures/ASTC/rock.ktx"),
                "Music/theme.ogg": try digest("Music#tier_2/theme.ogg"),
            ])
        // Random bytes do not compress: what was downloaded is about its own files, not the others'.
        let own: UInt64 = 200_000 + 120_000 + 90_000
        #expect(first.downloadedBytes >= own && first.downloadedBytes < own + 60_000, "\(first.downloadedBytes)")
        #expect(try await high.status(ofAssetPackWithID: "Game").contains(.upToDate))

        // The same container, now a low-tier device whose GPU reads only ETC2 (a GPU change): the
        // release is out of date for it; updating links the shared level and fetches only the rest.
        let low = try manager(f, "textureFormat=etc2,deviceTier=low")
        #expect(try await low.status(ofAssetPackWithID: "Game").contains(.outOfDate))
        let switched = try await low.fetch(packWithID: "Game")
        #expect(
            try installed(f) == [
                "Levels/common.dat": try digest("Levels/common.dat"),
                "Textures/rock.ktx": try digest("Textures/ETC2/rock.ktx"),
                "Music/theme.ogg": try digest("Music#tier_0/theme.ogg"),
            ])
        #expect(switched.linkedFiles == 1, "the shared level is linked, not downloaded")
        #expect(
            switched.downloadedBytes >= 160_000 && switched.downloadedBytes < 160_000 + 60_000,
            "\(switched.downloadedBytes)")
        #expect(try await low.status(ofAssetPackWithID: "Game").contains(.upToDate))
        #expect(try low.verifyInstalled().isEmpty)

        // A device that reads none of the pack's formats gets the default (ETC2); tier 1 gets tier 0.
        let other = try manager(f, "textureFormat=pvrtc,deviceTier=1", container: "other")
        _ = try await other.fetch(packWithID: "Game")
        #expect(try installed(f, container: "other") == (try installed(f)))
    }

    @Test func aPackWhoseVariantsClashOnADeviceFailsProcessingNamingTheFiles() async throws {
        let f = try ClientFixture()
        // Tier 1's file and the shared one install at one path on a tier-1 device; package never
        // writes this, so it is crafted.
        let pack = try CraftedPack(
            id: "Clash",
            files: [.init(path: "a#tier_1/x", bytes: [1, 2, 3]), .init(path: "a/x", bytes: [4, 5])],
            variants: try PackVariants(textureFormats: [], defaultTextureFormat: nil, deviceTiers: [1]))
        try f.repository.apps.createPack(app: f.app, id: "Clash")
        let v = try f.repository.uploads.uploadAndProcess(app: f.app, pack: "Clash", bytes: pack.bytes)
        #expect(v.state == .failed && v.reason?.contains("two files install at \"a/x\"") == true, "\(v)")
    }

    @Test func detectionReadsVulkanAndGLFeaturesAndSizesTheTierByMemoryAndCores() {
        let vulkan = """
            VkPhysicalDeviceFeatures:
            =========================
                textureCompressionETC2                  = true
                textureCompressionASTC_LDR              = false
                textureCompressionBC                    = true
            """
        #expect(DeviceProfile.textureFormats(vulkaninfo: vulkan) == ["bc7", "dxt1", "etc2", "etc1"])
        let gl =
            "OpenGL ES profile extensions:\n    GL_KHR_texture_compression_astc_ldr, GL_OES_compressed_ETC1_RGB8_texture,\n"
        #expect(DeviceProfile.textureFormats(glExtensions: gl) == ["astc", "etc1"])
        #expect(DeviceProfile.tier(memoryBytes: 16 << 30, cores: 8) == 2)
        #expect(DeviceProfile.tier(memoryBytes: 4 << 30, cores: 4) == 1)
        #expect(DeviceProfile.tier(memoryBytes: 2 << 30, cores: 8) == 0)
        #expect(DeviceTier.range.contains(DeviceProfile.detected.deviceTier))
    }
}
