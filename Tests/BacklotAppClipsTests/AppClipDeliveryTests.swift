import BacklotAppClips
import BacklotBasics
import BacklotClient
import BacklotTestSupport
import Foundation
import Testing

/// The App Clip delivery mode and the handoff to the full app, against a real server.
@Suite(.serialized) struct AppClipDeliveryTests {
    static let essential = #"{"essential": {"installationEventTypes": ["firstInstallation", "subsequentUpdate"]}}"#
    static let prefetch = #"{"prefetch": {"installationEventTypes": ["firstInstallation"]}}"#

    func clipManager(_ f: ClientFixture, _ container: String = "clip") throws -> AssetPackManager {
        var config = try f.manager(container: container).configuration
        config.isAppClip = true
        return try AssetPackManager(configuration: config)
    }

    @Test func essentialURLDownloadsAreRefusedInAClip() throws {
        let f = try ClientFixture()
        let manager = try DownloadManager(containerPath: f.dir.at("clip"), isAppClip: true) { _ in }
        let url = URL(string: f.server.baseURL + "v1/keys/root-1.json")!
        #expect {
            try manager.scheduleDownload(URLDownload(identifier: "e", url: url, fileSize: 10, isEssential: true))
        } throws: { e in
            guard let e = e as? BackgroundDownloadError, case .essentialDownloadNotPermitted("e") = e else {
                return false
            }
            return e.code == 109
        }
        #expect {
            try manager.startForegroundDownload(
                URLDownload(identifier: "e2", url: url, fileSize: 10, isEssential: true))
        } throws: { e in
            (e as? BackgroundDownloadError)?.code == 109
        }
        // Another process's manager, made without the flag, sees the container's mark.
        let other = try DownloadManager(containerPath: f.dir.at("clip")) { _ in }
        #expect(other.isAppClip)
        #expect {
            try other.scheduleDownload(URLDownload(identifier: "e3", url: url, fileSize: 10, isEssential: true))
        } throws: { e in
            (e as? BackgroundDownloadError)?.code == 109
        }
        try manager.scheduleDownload(URLDownload(identifier: "n", url: url))
        manager.waitUntilIdle()
    }

    @Test func aClipSkipsTheEssentialPhaseButCanAskForAnyPack() async throws {
        let f = try ClientFixture()
        try f.publish(id: "Essential", seed: 1, policy: Self.essential)
        try f.publish(id: "Extras", seed: 2, policy: Self.prefetch)
        try f.publish(id: "Later", seed: 3)
        let clip = try clipManager(f)
        #expect(try await clip.handle(event: .firstInstallation) == ["Extras"])
        #expect(!clip.assetPackIsAvailableLocally(withID: "Essential"))
        for id in ["Essential", "Later"] {
            try await clip.ensureLocalAvailability(of: try await clip.assetPack(withID: id))
            #expect(clip.assetPackIsAvailableLocally(withID: id))
        }
        // The same catalog in a full app's container: the essential phase runs.
        let app = try f.manager(container: "app")
        #expect(try await app.handle(event: .firstInstallation) == ["Essential", "Extras"])
    }

    @Test func handoffMovesMatchingPacksAndLeavesTheRest() async throws {
        let f = try ClientFixture()
        try f.publish(id: "Levels", seed: 1)
        try f.publish(id: "Extras", seed: 2)
        let clip = try clipManager(f)
        for id in ["Levels", "Extras"] {
            try await clip.ensureLocalAvailability(of: try await clip.assetPack(withID: id))
        }
        // Nothing verified in the app's container yet: refused, nothing moved.
        #expect {
            try AppClipHandoff.handoff(fromClipContainer: f.dir.at("clip"), toAppContainer: f.dir.at("app"))
        } throws: { e in
            (e as? BacklotError)?.code == .invalidInput
        }
        #expect(clip.assetPackIsAvailableLocally(withID: "Levels"))
        // A new Levels is released; the app's first catalog fetch sees it.
        try f.publish(id: "Levels", seed: 1, edit: true)
        let app = try f.manager(container: "app")
        #expect(try await app.allAssetPacks.count == 2)
        let clipContainer = try ClientContainer(path: f.dir.at("clip"))
        let extras = try #require(try clipContainer.installed("Extras"))
        let clipFile = clipContainer.releaseFolder("Extras", digest: extras.digest) + "/Levels/level1.dat"
        let inode = try FileManager.default.attributesOfItem(atPath: clipFile)[.systemFileNumber] as? Int

        // An unfinished attempt at another release of Extras in the app's container (a crash): the
        // adoption ends as every install does, removing it.
        let stray = try ClientContainer(path: f.dir.at("app")).packFolder("Extras") + "/0000.partial"
        try FileSystem.makeDirectories(stray)
        try Data("half".utf8).write(to: URL(fileURLWithPath: stray + "/file"))

        let report = try AppClipHandoff.handoff(fromClipContainer: f.dir.at("clip"), toAppContainer: f.dir.at("app"))
        #expect(report.moved == ["Extras"])
        #expect(!FileManager.default.fileExists(atPath: stray), "the unfinished attempt is removed")
        #expect(report.left.map(\.id) == ["Levels"])
        let appContainer = try ClientContainer(path: f.dir.at("app"))
        let moved = try #require(try appContainer.installed("Extras"))
        #expect(moved.digest == extras.digest)
        let appFile = appContainer.releaseFolder("Extras", digest: moved.digest) + "/Levels/level1.dat"
        // a hard link, not a copy
        #expect(try FileManager.default.attributesOfItem(atPath: appFile)[.systemFileNumber] as? Int == inode)
        #expect(try FileManager.default.attributesOfItem(atPath: appFile)[.posixPermissions] as? Int == 0o444)
        #expect(try app.verifyInstalled().isEmpty)
        #expect(try app.contents(at: "Levels/level1.dat", searchingInAssetPackWithID: "Extras").count > 0)
        #expect(try clipContainer.installed("Extras") == nil)
        #expect(try clipContainer.installed("Levels") != nil)  // left for the app to download
        #expect(try await app.status(ofAssetPackWithID: "Extras").contains(.upToDate))
        #expect(try await app.status(ofAssetPackWithID: "Levels").contains(.downloadAvailable))
    }

    @Test func aDamagedClipFileIsNotHandedOver() async throws {
        let f = try ClientFixture()
        try f.publish(id: "Extras", seed: 2)
        let clip = try clipManager(f)
        try await clip.ensureLocalAvailability(of: try await clip.assetPack(withID: "Extras"))
        let app = try f.manager(container: "app")
        _ = try await app.allAssetPacks
        let clipContainer = try ClientContainer(path: f.dir.at("clip"))
        let installed = try #require(try clipContainer.installed("Extras"))
        let file = clipContainer.releaseFolder("Extras", digest: installed.digest) + "/Levels/level1.dat"
        chmod(file, 0o644)
        let handle = try #require(FileHandle(forWritingAtPath: file))
        try handle.seek(toOffset: 10)
        handle.write(Data([0xff, 0xfe]))
        try handle.close()
        let report = try AppClipHandoff.handoff(fromClipContainer: f.dir.at("clip"), toAppContainer: f.dir.at("app"))
        #expect(report.moved.isEmpty)
        #expect(report.left.count == 1 && report.left[0].id == "Extras" && report.left[0].reason.contains("level1.dat"))
        #expect(!app.assetPackIsAvailableLocally(withID: "Extras"))
        let appContainer = try ClientContainer(path: f.dir.at("app"))
        #expect(clipContainer.isMarkedAppClip && !appContainer.isMarkedAppClip)
        #expect(
            try FileManager.default.contentsOfDirectory(
                atPath: ClientContainer(path: f.dir.at("app")).packFolder("Extras")
            ).isEmpty)
    }

    /// A clip that made its pack folder a link to the app's, where the app holds the same release:
    /// the move would have removed the app's files through it. Refused; the app's files stay.
    @Test func aClipFolderLinkedToTheAppsIsNotHandedOverNorRemoved() async throws {
        let f = try ClientFixture()
        try f.publish(id: "Extras", seed: 2)
        let clip = try clipManager(f)
        try await clip.ensureLocalAvailability(of: try await clip.assetPack(withID: "Extras"))
        let app = try f.manager(container: "app")
        try await app.ensureLocalAvailability(of: try await app.assetPack(withID: "Extras"))
        let clipContainer = try ClientContainer(path: f.dir.at("clip"))
        let appContainer = try ClientContainer(path: f.dir.at("app"))
        let clipPacks = clipContainer.packFolder("Extras")
        try FileManager.default.removeItem(atPath: clipPacks)
        #expect(symlink(appContainer.packFolder("Extras"), clipPacks) == 0)
        let report = try AppClipHandoff.handoff(fromClipContainer: f.dir.at("clip"), toAppContainer: f.dir.at("app"))
        #expect(report.moved.isEmpty)
        #expect(
            report.left.count == 1 && report.left[0].reason.contains("symbolic link"), "\(report.left)")
        #expect(try app.verifyInstalled().isEmpty, "the app's files are all there")
        #expect(try app.contents(at: "Levels/level1.dat", searchingInAssetPackWithID: "Extras").count > 0)
    }

    @Test func aFileOfAnotherSizeIsRefusedBeforeItIsRead() async throws {
        let f = try ClientFixture()
        try f.publish(id: "Extras", seed: 2)
        let clip = try clipManager(f)
        try await clip.ensureLocalAvailability(of: try await clip.assetPack(withID: "Extras"))
        let app = try f.manager(container: "app")
        _ = try await app.allAssetPacks
        let clipContainer = try ClientContainer(path: f.dir.at("clip"))
        let installed = try #require(try clipContainer.installed("Extras"))
        let file = clipContainer.releaseFolder("Extras", digest: installed.digest) + "/Levels/level1.dat"
        // A 20 GB sparse file where the pack's file was: refused on its size, with nothing read or linked.
        chmod(file, 0o644)
        #expect(truncate(file, 20_000_000_000) == 0)
        let report = try AppClipHandoff.handoff(fromClipContainer: f.dir.at("clip"), toAppContainer: f.dir.at("app"))
        #expect(report.moved.isEmpty)
        #expect(
            report.left.count == 1 && report.left[0].reason.contains("level1.dat has 20000000000 bytes, not the"),
            "\(report.left)")
        #expect(try #require(try FileSystem.linkStatus(file)).linkCount == 1)
        #expect(!app.assetPackIsAvailableLocally(withID: "Extras"))
    }

    @Test func keepCopiesSoTheClipAndTheAppShareNoInode() async throws {
        let f = try ClientFixture()
        try f.publish(id: "Extras", seed: 2)
        let clip = try clipManager(f)
        try await clip.ensureLocalAvailability(of: try await clip.assetPack(withID: "Extras"))
        let app = try f.manager(container: "app")
        _ = try await app.allAssetPacks
        let report = try AppClipHandoff.handoff(
            fromClipContainer: f.dir.at("clip"), toAppContainer: f.dir.at("app"), keepClipCopy: true)
        #expect(report.moved == ["Extras"])
        let clipContainer = try ClientContainer(path: f.dir.at("clip"))
        let appContainer = try ClientContainer(path: f.dir.at("app"))
        let digest = try #require(try appContainer.installed("Extras")).digest
        let clipFile = clipContainer.releaseFolder("Extras", digest: digest) + "/Levels/level1.dat"
        let appFile = appContainer.releaseFolder("Extras", digest: digest) + "/Levels/level1.dat"
        let attributes = { (p: String) in try FileManager.default.attributesOfItem(atPath: p) }
        #expect(try attributes(clipFile)[.systemFileNumber] as? Int != attributes(appFile)[.systemFileNumber] as? Int)
        #expect(try attributes(appFile)[.posixPermissions] as? Int == 0o444)
        // Writing through the clip's copy leaves the app's pack as it was.
        chmod(clipFile, 0o644)
        let handle = try #require(FileHandle(forWritingAtPath: clipFile))
        try handle.seek(toOffset: 0)
        handle.write(Data([0xde, 0xad, 0xbe, 0xef]))
        try handle.close()
        #expect(try app.verifyInstalled().isEmpty)
        #expect(try clip.verifyInstalled().isEmpty == false)
    }
}
