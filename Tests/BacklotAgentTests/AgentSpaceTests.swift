import BacklotAgent
import BacklotBasics
import BacklotClient
import BacklotContainer
import BacklotTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Low disk space on a small file system of the test's own (a 48 MiB tmpfs, mounted by the test:
/// it needs root, as CI has): under `BacklotMinimumFreeSpace` free, the agent deletes finished
/// files nobody claimed, then packs neither essential nor in use, oldest first, and the app is told.
@Suite(.serialized, .requires(.root)) struct AgentSpaceTests {
    /// A tmpfs of `mebibytes` at a new folder, unmounted at the end.
    final class SmallFileSystem {
        let dir: TemporaryDirectory
        var path: String { dir.at("fs") }

        init(mebibytes: Int) throws {
            dir = try TemporaryDirectory("small-fs")
            try FileManager.default.createDirectory(atPath: dir.at("fs"), withIntermediateDirectories: true)
            let mounted = try ChildProcess.run(
                executable: "/usr/bin/mount", arguments: ["-t", "tmpfs", "-o", "size=\(mebibytes)m", "tmpfs", path],
                environment: [:], until: .now + .seconds(30))
            guard mounted.succeeded else {
                throw BacklotError(.io, "mount: \(String(decoding: mounted.output, as: UTF8.self))", context: path)
            }
        }

        var free: UInt64 { FileSystem.availableBytes(at: path) ?? 0 }

        deinit {
            _ = try? ChildProcess.run(
                executable: "/usr/bin/umount", arguments: ["-l", path], environment: [:], until: .now + .seconds(30))
            dir.remove()
        }
    }

    @Test func whatNobodyNeedsGoesOldestFirstAndTheAppIsTold() async throws {
        let fs = try SmallFileSystem(mebibytes: 48)
        let f = try AgentFixture(container: fs.path + "/device")
        // Three packs (about 1.1 MB each), installed in this order: on demand, prefetch, essential.
        try f.server.publish(id: "A-Old", seed: 1)
        try f.server.publish(id: "B-Held", seed: 2, policy: AgentFixture.prefetch)
        try f.server.publish(id: "C-Must", seed: 3, policy: AgentFixture.essential)
        let manager = try AssetPackManager(
            configuration: .init(
                containerPath: f.container, catalogURL: f.server.catalogURL(), app: f.server.app, channel: .internal,
                trustedKeys: [f.server.pinned], platform: .linux))
        for id in ["A-Old", "B-Held", "C-Must"] {
            try await manager.ensureLocalAvailability(of: try await manager.assetPack(withID: id))
            sleep(1)  // installed in distinct seconds: "oldest" is unambiguous
        }
        // A finished URL download's file, left for an app that has not claimed it (300 KB).
        let layout = ContainerLayout(root: f.container)
        try FileManager.default.createDirectory(atPath: layout.handoverFolder, withIntermediateDirectories: true)
        let left = layout.handoverFolder + "/left.file"
        try Data(count: 300_000).write(to: URL(fileURLWithPath: left))
        let store = try StateStore(layout: layout)
        let seq = try store.transaction { tx in
            try tx.recordURLOutcome(
                URLDownloadRecord(
                    identifier: "intro", url: "https://cdn.example/intro", fileSize: 300_000, essential: false,
                    priority: 0),
                kind: "finished", path: left, staged: nil, message: nil, code: nil, state: .forApp, owner: "agent")
        }
        // An app reads a file of B-Held.
        let installed = try #require(try ClientContainer(path: f.container).installed("B-Held"))
        let held = try #require(
            FileHandle(
                forReadingAtPath: ClientContainer(path: f.container).releaseFolder("B-Held", digest: installed.digest)
                    + "/readme.txt"))

        // The agent's round, with a threshold a little above what is free: the unclaimed file is enough.
        let agent = try f.agent(config: try f.writeConfig(["BacklotMinimumFreeSpace": fs.free + 100_000]))
        await agent.round()
        #expect(
            f.lines.all.contains(
                "low space: deleted the finished file of download intro nobody claimed (300000 bytes)"),
            "\(f.lines.all)")
        #expect(!FileSystem.exists(left))
        let outcome = try #require(try store.read { try $0.urlOutcome(seq) })
        #expect(outcome.kind == "failed" && outcome.message?.contains("deleted to free space") == true)
        #expect(try ClientContainer(path: f.container).installed().map(\.id).sorted() == ["A-Old", "B-Held", "C-Must"])

        // Short again: the oldest pack goes; the one held open and the essential one never do.
        #expect(try manager.reclaimSpace(minimumFree: fs.free + 100_000).map(Self.name) == ["pack A-Old"])
        #expect(!manager.assetPackIsAvailableLocally(withID: "A-Old"))
        #expect(try manager.reclaimSpace(minimumFree: fs.free + 100_000).isEmpty)
        #expect(try ClientContainer(path: f.container).installed().map(\.id).sorted() == ["B-Held", "C-Must"])
        try held.close()
        #expect(try manager.reclaimSpace(minimumFree: fs.free + 100_000).map(Self.name) == ["pack B-Held"])
        #expect(try ClientContainer(path: f.container).installed().map(\.id) == ["C-Must"])

        // The app is told once, by checkForUpdates, which deleted packs went.
        #expect(try await manager.checkForUpdates().removedIDs == ["A-Old", "B-Held"])
        #expect(try await manager.checkForUpdates().removedIDs.isEmpty)
        // With space enough, nothing is deleted.
        #expect(try manager.reclaimSpace(minimumFree: 1 << 20).isEmpty)
        _ = agent
    }

    static func name(_ item: ClientContainer.Reclaimed) -> String {
        switch item {
        case .urlDownload(let id, _): "download \(id)"
        case .pack(let id, _): "pack \(id)"
        }
    }
}
