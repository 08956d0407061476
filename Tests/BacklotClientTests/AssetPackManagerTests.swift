import BacklotBasics
import BacklotClient
import BacklotCrypto
import BacklotFormat
import BacklotHTTPClient
import BacklotRepository
import BacklotServer
import BacklotTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The client library against a real server: install, delta update, files, statuses, events.
@Suite(.serialized) struct AssetPackManagerTests {
    @Test func installsAPackWhoseFilesAreIdenticalReadOnlyAndReadable() async throws {
        let f = try ClientFixture()
        let (source, _) = try f.publish()
        let manager = try f.manager()
        let pack = try await manager.assetPack(withID: "Levels")
        #expect(pack.version == 1 && pack.downloadPolicy == .onDemand)
        #expect(manager.assetPackIsAvailableLocally(withID: "Levels") == false)
        let updates = manager.statusUpdates(forAssetPackWithID: "Levels")
        try await manager.ensureLocalAvailability(of: pack)
        var seen: [String] = []
        for await u in updates {
            switch u {
            case .began: seen.append("began")
            case .downloading: seen.append("downloading")
            case .finished: seen.append("finished")
            default: seen.append("other")
            }
        }
        #expect(seen == ["began", "downloading", "finished"])
        #expect(manager.assetPackIsAvailableLocally(withID: "Levels"))
        let status = try await manager.status(ofAssetPackWithID: "Levels")
        #expect(status.contains(.downloaded) && status.contains(.upToDate))

        let data = try manager.contents(at: "Levels/level1.dat")
        #expect(data == (try Data(contentsOf: URL(fileURLWithPath: source + "/Levels/level1.dat"))))
        let handle = try manager.descriptor(for: "readme.txt", searchingInAssetPackWithID: "Levels")
        var st = stat()
        #expect(fstat(handle.fileDescriptor, &st) == 0 && st.st_mode & 0o222 == 0, "installed files are read-only")
        try handle.close()
        let folder = manager.url(for: "readme.txt").deletingLastPathComponent().path
        #expect(try sameFiles(source, folder))
        #expect { try manager.contents(at: "nope.txt") } throws: {
            ($0 as? ManagedBackgroundAssetsError) == .fileNotFound(at: "nope.txt")
        }
        await #expect(throws: ManagedBackgroundAssetsError.assetPackNotFound(withID: "Missing")) {
            try await manager.assetPack(withID: "Missing")
        }
    }

    @Test func anUpdateDownloadsOnlyWhatChangedAndSwitchesAtOnce() async throws {
        let f = try ClientFixture()
        try f.publish()
        let manager = try f.manager()
        let first = try await manager.fetch(packWithID: "Levels")
        let full = UInt64(try FileDescriptor.openForReading(try f.archivePath()).size())
        #expect(first.downloadedBytes > full * 9 / 10)
        let oldPath = manager.url(for: "readme.txt").path

        let (source, _) = try f.publish(edit: true)
        let status = try await manager.status(ofAssetPackWithID: "Levels")
        #expect(status.contains(.outOfDate) && status.contains(.updateAvailable))
        let update = try await manager.fetch(packWithID: "Levels")
        #expect(update.version == 2)
        #expect(update.downloadedBytes < full / 4, "\(update.downloadedBytes) of \(full)")
        #expect(update.linkedFiles >= 4 && update.reusedChunks > 0)
        #expect(try sameFiles(source, manager.url(for: "readme.txt").deletingLastPathComponent().path))
        #expect(!FileSystem.exists(oldPath), "the old release is removed once replaced")
        #expect(try await manager.fetch(packWithID: "Levels").downloadedBytes == 0)
    }

    /// A release rolled back on the server is installed, though its pack version goes down.
    @Test func aRolledBackReleaseIsInstalled() async throws {
        let f = try ClientFixture()
        let (v1Source, _) = try f.publish()
        try f.publish(edit: true)
        let manager = try f.manager()
        #expect(try await manager.fetch(packWithID: "Levels").version == 2)
        try f.repository.releases.rollback(app: f.app, pack: "Levels", channel: .internal, to: 1)
        let result = try await manager.checkForUpdates()
        #expect(result.updatingIDs == ["Levels"])
        #expect(try await manager.assetPack(withID: "Levels").version == 1)
        #expect(try sameFiles(v1Source, manager.url(for: "readme.txt").deletingLastPathComponent().path))
    }

    @Test func eventsFetchTheirPacksAndObsoletePacksAreRemoved() async throws {
        let f = try ClientFixture()
        try f.publish(id: "Essential", policy: #"{"essential": {"installationEventTypes": ["firstInstallation"]}}"#)
        try f.publish(id: "Later", seed: 7, policy: #"{"prefetch": {"installationEventTypes": ["subsequentUpdate"]}}"#)
        try f.publish(id: "Optional", seed: 8)
        let manager = try f.manager()
        #expect(try await manager.handle(event: .firstInstallation) == ["Essential"])
        #expect(try await manager.handle(event: .subsequentUpdate) == ["Later"])
        #expect(!manager.assetPackIsAvailableLocally(withID: "Optional"))
        try f.repository.releases.withdraw(app: f.app, pack: "Later", channel: .internal)
        #expect(try await manager.status(ofAssetPackWithID: "Later").contains(.obsolete))
        let result = try await manager.checkForUpdates()
        #expect(result.removedIDs == ["Later"] && result.updatingIDs.isEmpty)
        #expect(!manager.assetPackIsAvailableLocally(withID: "Later"))
        try await manager.remove(assetPackWithID: "Essential")
        #expect(await manager.localStatus(ofAssetPackWithID: "Essential").isEmpty)
    }

    @Test func twoPacksWithTheSamePathResolveByPackIDOrder() async throws {
        let f = try ClientFixture()
        try f.publish(id: "B", seed: 1)
        try f.publish(id: "A", seed: 2)
        let manager = try f.manager()
        _ = try await manager.fetch(packWithID: "B")
        _ = try await manager.fetch(packWithID: "A")
        let fromA = try manager.contents(at: "readme.txt", searchingInAssetPackWithID: "A")
        let fromB = try manager.contents(at: "readme.txt", searchingInAssetPackWithID: "B")
        #expect(fromA != fromB)
        #expect(try manager.contents(at: "readme.txt") == fromA)
    }
}
