import BacklotBasics
import BacklotClient
import BacklotFormat
import BacklotTestSupport
import Foundation
import Testing

/// A pack of many small files (#18, scaled down from the benchmark's 50,000; format version 2,
/// with a zstd dictionary) installs from a real server: every file is there with its bytes and its read-only mode, and an update that replaces
/// a few files brings only those while the others stay the same files.
@Suite(.serialized) struct ManySmallFilesInstallTests {
    /// Writes `count` small files (100 a folder) and an executable; `changed` files get other bytes.
    func writeTree(_ root: String, count: Int, seed: UInt64, changed: Set<Int> = []) throws {
        var g = SeededGenerator(seed: seed)
        var other = SeededGenerator(seed: seed &+ 1)
        for i in 0..<count {
            let size = 500 + Int(g.next() % 7500)
            var bytes = i % 2 == 0 ? g.text(size) : g.bytes(size)
            if changed.contains(i) { bytes = other.bytes(size) }
            let path = root + "/small/\(i / 100)/file-\(i)"
            try FileManager.default.createDirectory(
                atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try Data(bytes).write(to: URL(fileURLWithPath: path))
        }
        let tool = root + "/bin/tool"
        try FileManager.default.createDirectory(atPath: root + "/bin", withIntermediateDirectories: true)
        try Data(g.bytes(1000)).write(to: URL(fileURLWithPath: tool))
        chmod(tool, 0o755)
    }

    /// Packages, uploads and releases `source`; returns the pack's format version.
    @discardableResult
    func publish(_ f: ClientFixture, source: String) throws -> UInt16 {
        let dir = TemporaryDirectory(existing: f.dir.path)
        let (manifest, _) = try PackManifest.load(Array(SamplePack.manifest(id: "Small").utf8), source: "m")
        let selection = try SourceSelection(manifest: manifest, sourceRoot: source)
        let out = dir.at("small-\(UUID().uuidString).pack")
        _ = try PackWriter(options: .init(jobs: 2, overwrite: true)).write(
            manifest: manifest, selection: selection, to: out)
        if (try? f.repository.apps.packs(app: f.app).contains("Small")) != true {
            try f.repository.apps.createPack(app: f.app, id: "Small")
        }
        let v = try f.repository.uploads.uploadAndProcess(
            app: f.app, pack: "Small", bytes: Array(try Data(contentsOf: URL(fileURLWithPath: out))))
        try f.repository.releases.release(app: f.app, pack: "Small", version: v.number, channel: .internal)
        return try PackReader(path: out).header.formatVersion
    }

    @Test func manySmallFilesInstallAndUpdateFileByFile() async throws {
        let f = try ClientFixture()
        var g = SeededGenerator.fromEnvironment()
        print("manySmallFilesInstallAndUpdateFileByFile seed: \(g.seed)")
        let seed = g.next()
        let count = 1_200
        let v1 = f.dir.at("small-v1")
        try writeTree(v1, count: count, seed: seed)
        // So many small files get a zstd dictionary: the server processes, and the client
        // installs and updates, a pack of format version 2.
        #expect(try publish(f, source: v1) == 2)

        let manager = try f.manager()
        try await manager.ensureLocalAvailability(of: try await manager.assetPack(withID: "Small"))
        for i in stride(from: 0, to: count, by: 37) {
            let relative = "small/\(i / 100)/file-\(i)"
            #expect(
                try manager.contents(at: relative) == Data(contentsOf: URL(fileURLWithPath: v1 + "/" + relative)),
                "\(relative)")
        }
        #expect(try ClientContainer.verify(path: f.dir.at("container")).isEmpty)

        // v2: 5 % of the files replaced.
        let changed = Set((0..<(count / 20)).map { _ in Int(g.next() % UInt64(count)) })
        let v2 = f.dir.at("small-v2")
        try writeTree(v2, count: count, seed: seed, changed: changed)
        #expect(try publish(f, source: v2) == 2)
        try await manager.ensureLocalAvailability(
            of: try await manager.assetPack(withID: "Small"), requireLatestVersion: true)
        for i in changed.sorted().prefix(20) {
            let relative = "small/\(i / 100)/file-\(i)"
            #expect(
                try manager.contents(at: relative) == Data(contentsOf: URL(fileURLWithPath: v2 + "/" + relative)),
                "\(relative)")
        }
        #expect(try ClientContainer.verify(path: f.dir.at("container")).isEmpty)
        // The installed files are read-only, the executable stays executable.
        let handle = try manager.descriptor(for: "bin/tool", searchingInAssetPackWithID: "Small")
        defer { try? handle.close() }
        let fd = FileDescriptor(rawValue: handle.fileDescriptor, path: "bin/tool")
        #expect(try FileSystem.status(of: fd).mode & 0o777 == 0o555)
    }
}
