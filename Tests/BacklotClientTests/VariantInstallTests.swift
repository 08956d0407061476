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

    /// The signed catalog's current release of `pack` on the internal channel.
    static func release(_ f: ClientFixture, _ pack: String) throws -> Catalog.Release {
        let path = f.repository.publication.catalogPath(app: f.app, channel: .internal)
        let catalog = try Catalog.verify(
            Array(try Data(contentsOf: URL(fileURLWithPath: path))), trusting: [f.pinned], app: f.app,
            channel: .internal, now: Date(), source: "catalog")
        return try #require(catalog.packs.first { $0.id.rawValue == pack }).release
    }

    /// The installed files of a pack ("Game" unless said) in a container, by path, with their SHA-256.
    func installed(
        _ f: ClientFixture, pack: String = "Game", container: String = "device"
    ) throws -> [String: SHA256Digest] {
        let c = try ClientContainer(path: f.dir.at(container))
        let release = try #require(try c.installed(pack))
        let folder = c.releaseFolder(pack, digest: release.digest)
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
        let release = try Self.release(f, "Game")
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

    /// Version 1 of "Themes": shared text files and a text "texture" per format, each edited a
    /// little in version 2 (seed printed). Publishes and releases the version; returns its files
    /// as the source tree has them.
    func publishThemes(_ f: ClientFixture, _ g: inout SeededGenerator, _ files: inout [String: [UInt8]]) throws {
        if files.isEmpty {
            for i in 0..<4 { files["Levels/level\(i).txt"] = g.text(60_000 + i * 7_000) }
            files["Textures/ASTC/rock.txt"] = g.text(50_000)
            files["Textures/ETC2/rock.txt"] = g.text(45_000)
        } else {
            for name in files.keys.sorted() {
                var bytes = files[name]!
                let at = Int(g.next() % UInt64(bytes.count - 500))
                bytes.replaceSubrange(at..<at + 80, with: g.text(120))
                files[name] = bytes
            }
        }
        let number = (try? f.repository.uploads.versions(app: f.app, pack: "Themes").count) ?? 0
        let src = TemporaryDirectory.Named(f.dir.at("themes/\(number + 1)"))
        for (name, bytes) in files { try src.asTemporary.write("src/" + name, bytes) }
        let manifest = """
            {"assetPackID": "Themes", "downloadPolicy": {"onDemand": {}}, "platforms": ["linux"],
             "fileSelectors": [{"directory": "Levels"}],
             "variants": {"textureFormat": {"default": "etc2",
                "astc": [{"directorySource": "Textures/ASTC", "directoryDestination": "Textures"}],
                "etc2": [{"directorySource": "Textures/ETC2", "directoryDestination": "Textures"}]}}}
            """
        let path = try SamplePack.build(in: src.asTemporary, manifestJSON: manifest, averageChunkSize: 16 << 10)
        if number == 0 { try f.repository.apps.createPack(app: f.app, id: "Themes") }
        let v = try f.repository.uploads.uploadAndProcess(
            app: f.app, pack: "Themes", bytes: Array(try Data(contentsOf: URL(fileURLWithPath: path))))
        #expect(v.state == .complete, "\(v)")
        try f.repository.releases.release(app: f.app, pack: "Themes", version: v.number, channel: .internal)
    }

    /// What a device of texture format `format` installs of `files`, by path.
    func view(of files: [String: [UInt8]], format: String) -> [String: SHA256Digest] {
        var out: [String: SHA256Digest] = [:]
        for (name, bytes) in files {
            if name.hasPrefix("Levels/") { out[name] = SHA256.hash(bytes) }
            if name.hasPrefix("Textures/\(format)/") {
                out["Textures/" + name.dropFirst("Textures/\(format)/".count)] = SHA256.hash(bytes)
            }
        }
        return out
    }

    /// A delta of format version 3 on a pack with variants: its early frames rebuild shared files'
    /// chunks only, so devices of either format update through it, each reading the early frames
    /// and its own variant's frames, and ends with exactly its files of version 2.
    @Test func devicesOfEachVariantUpdateThroughAVersionThreeDelta() async throws {
        let f = try ClientFixture()
        let seed: UInt64 = 1530
        print("VariantInstallTests seed \(seed)")
        var g = SeededGenerator(seed: seed)
        var files: [String: [UInt8]] = [:]
        try publishThemes(f, &g, &files)
        let devices = [("astc", "textureFormat=astc"), ("etc2", "textureFormat=etc2")]
        for (format, profile) in devices {
            let manager = try manager(f, profile, container: format)
            _ = try await manager.fetch(packWithID: "Themes")
            #expect(try installed(f, pack: "Themes", container: format) == view(of: files, format: format.uppercased()))
        }

        try publishThemes(f, &g, &files)
        let release = try Self.release(f, "Themes")
        let delta = try #require(release.deltas.first, "a delta from version 1")
        let path = f.repository.directory.publicTreePath + "/v1/deltas/\(delta.sha256.hex).delta"
        let bytes = try Array(Data(contentsOf: URL(fileURLWithPath: path)))
        let prefix = try PackDelta.decodePrefix(
            Array(bytes.prefix(Int(delta.prefixLength))), base: delta.base, target: release.indexSHA256,
            fileSize: delta.size, source: "t")
        try #require(prefix.formatVersion == 3 && prefix.earlyCount >= 1, "\(prefix.earlyCount) early entries")

        for (format, profile) in devices {
            let manager = try manager(f, profile, container: format)
            let report = try await manager.fetch(packWithID: "Themes")
            #expect(try installed(f, pack: "Themes", container: format) == view(of: files, format: format.uppercased()))
            let use = try #require(try ClientContainer(path: f.dir.at(format)).lastDeltaUse("Themes"))
            #expect(use.chunks > 0 && report.downloadedChunks == 0, "every changed chunk from the delta: \(report)")
            // The early frames and this device's frames, never the whole delta's.
            #expect(use.bytes < delta.size, "\(use.bytes) of the delta's \(delta.size) bytes")
            #expect(try manager.verifyInstalled().isEmpty)
        }
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
