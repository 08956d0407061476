import BacklotBasics
import BacklotClient
import BacklotExtension
import BacklotJSON
import BacklotProtocol
import BacklotTestSupport
import Foundation
import Testing

/// The seeds' code and Apple's documented API, run as an app runs them: `backlot-apple-sample-app`
/// (Tests/AppleSamples/SampleApp) against a real server, configured by its environment only.
@Suite(.serialized) struct AppleSampleAppTests {
    /// The folder holding the built executables.
    static var binaries: String {
        let candidates = [
            URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().path,
            URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().appendingPathComponent(".build/debug").path,
        ]
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0 + "/backlot-apple-sample-app") }
            ?? candidates[1]
    }

    /// Publishes the seed's "Tutorial" pack (a video and a level) and writes the app's configuration.
    static func tutorial(
        _ f: ClientFixture, extra: [String: Any] = [:], dropping: String? = nil
    ) throws -> (
        config: String, video: [UInt8]
    ) {
        let seed: UInt64 = 17
        print("AppleSampleAppTests: seed \(seed)")
        var g = SeededGenerator(seed: seed)
        let src = TemporaryDirectory.Named(f.dir.at("tutorial")).asTemporary
        let video = g.bytes(3_000_000)
        try src.write("src/Videos/Introduction.m4v", video)
        try src.write("src/Levels/1.txt", "level one\n")
        let pack = try SamplePack.build(in: src, manifestJSON: SamplePack.manifest(id: "Tutorial"))
        if (try? f.repository.apps.packs(app: f.app).contains("Tutorial")) != true {
            try f.repository.apps.createPack(app: f.app, id: "Tutorial")
            let v = try f.repository.uploads.uploadAndProcess(
                app: f.app, pack: "Tutorial", bytes: Array(try Data(contentsOf: URL(fileURLWithPath: pack))))
            try f.repository.releases.release(app: f.app, pack: "Tutorial", version: v.number, channel: .internal)
        }
        if !FileSystem.exists(f.dir.at("root.pub")) {
            try FileManager.default.copyItem(atPath: f.repository.directory.publicKeyPath, toPath: f.dir.at("root.pub"))
        }
        var config: [String: Any] = [
            "BacklotCatalogURL": f.catalogURL().absoluteString, "BacklotTrustedKey": "root.pub",
            // 1 MB/s: the 3 MB video takes long enough for the seed's cancel to find it downloading.
            "BacklotBandwidthLimit": 1_000_000,
        ]
        if let dropping { config[dropping] = nil }
        for (k, v) in extra { config[k] = v }
        let path = f.dir.at("app.json")
        try JSONSerialization.data(withJSONObject: config, options: [.sortedKeys]).write(to: URL(fileURLWithPath: path))
        return (path, video)
    }

    @Test func seedFlowRunsAgainstARealServer() throws {
        let f = try ClientFixture()
        let (config, video) = try Self.tutorial(f)
        let container = f.dir.at("device")
        try FileManager.default.createDirectory(atPath: container, withIntermediateDirectories: true)
        // The 2022 part downloads the published archive by URL, at its exact size.
        let archive = try f.archivePath("Tutorial")
        let size = try #require(try FileSystem.status(archive)).size
        let url = f.server.baseURL + "v1/packs/" + URL(fileURLWithPath: archive).lastPathComponent
        let outcome = try ChildProcess.run(
            executable: Self.binaries + "/backlot-apple-sample-app", arguments: [],
            environment: [
                "BACKLOT_CONTAINER": container, "BACKLOT_CONFIG": config, "SAMPLE_URL": url, "SAMPLE_SIZE": "\(size)",
                "PATH": "/usr/bin:/bin",
            ], until: .now + .seconds(300))
        let out = String(decoding: outcome.output, as: UTF8.self)
        #expect(outcome.succeeded, "\(out)")
        let lines = out.split(separator: "\n").map(String.init)
        #expect(lines.contains("cancelled true"), "the seed's progress.cancel() cancels the download: \(out)")
        #expect(lines.contains("downloaded true"), "\(out)")
        #expect(lines.contains("contents \(video.count)"), "\(out)")
        #expect(lines.contains("descriptor \(video.count)"), "\(out)")
        #expect(lines.contains { $0.hasPrefix("url /") && $0.hasSuffix("/Levels/1.txt") }, "\(out)")
        #expect(lines.contains("status downloaded true upToDate true"), "\(out)")
        #expect(lines.contains("updates 0 removed 0"), "\(out)")
        #expect(lines.contains("began intro true"), "\(out)")
        #expect(lines.contains("progress \(size)"), "\(out)")
        #expect(lines.contains("beforeDate acquired true"), "\(out)")
        #expect(lines.contains("async form saw true"), "\(out)")
        #expect(lines.contains("finished intro true"), "the delegate got the file: \(out)")
        #expect(lines.last == "done", "\(out)")
        // The delegate moved the downloaded file; it is the archive, byte for byte.
        #expect(
            try Data(contentsOf: URL(fileURLWithPath: container + "/Intro.bin"))
                == Data(contentsOf: URL(fileURLWithPath: archive)))
        #expect(try ClientContainer(path: container).installed().map(\.id) == ["Tutorial"])
    }

    @Test func sharedNamesTheMissingKey() throws {
        let f = try ClientFixture()
        let (config, _) = try Self.tutorial(f, dropping: "BacklotTrustedKey")
        let outcome = try ChildProcess.run(
            executable: Self.binaries + "/backlot-apple-sample-app", arguments: [],
            environment: ["BACKLOT_CONTAINER": f.dir.at("device"), "BACKLOT_CONFIG": config],
            until: .now + .seconds(120))
        let out = String(decoding: outcome.output, as: UTF8.self)
        #expect(!outcome.succeeded)
        #expect(out.contains("AssetPackManager.shared cannot be made") && out.contains("BacklotTrustedKey"), "\(out)")
    }

    @Test func configurationFromEnvironmentNamesWhatIsMissing() throws {
        let f = try ClientFixture()
        let (config, _) = try Self.tutorial(f)
        #expect {
            try AssetPackManager.Configuration.fromEnvironment([:], executablePath: nil)
        } throws: { ($0 as? BacklotError)?.message.contains("BACKLOT_CONTAINER") == true }
        #expect {
            try AssetPackManager.Configuration.fromEnvironment(
                ["BACKLOT_CONTAINER": f.dir.at("d")], executablePath: nil)
        } throws: { ($0 as? BacklotError)?.message.contains("BACKLOT_CONFIG") == true }
        let (noCatalog, _) = try Self.tutorial(f, dropping: "BacklotCatalogURL")
        #expect {
            try AssetPackManager.Configuration.fromEnvironment(
                ["BACKLOT_CONTAINER": f.dir.at("d"), "BACKLOT_CONFIG": noCatalog], executablePath: nil)
        } throws: { ($0 as? BacklotError)?.message.contains("BacklotCatalogURL") == true }
        let (good, _) = try Self.tutorial(f)
        _ = config
        let c = try AssetPackManager.Configuration.fromEnvironment(
            ["BACKLOT_CONTAINER": f.dir.at("d"), "BACKLOT_CONFIG": good], executablePath: nil)
        #expect(c.catalogURL == f.catalogURL() && c.app == f.app && c.channel == .internal)
        #expect(c.trustedKeys == [f.pinned] && c.bandwidthLimit == 1_000_000)
    }

    /// The seed's `StoreDownloaderExtension` is a working downloader extension: it answers the agent's call.
    @Test func seedExtensionAnswersTheAgentsCall() throws {
        let dir = try TemporaryDirectory("apple-extension")
        defer { dir.remove() }
        let pack = AssetPack(
            id: "Tutorial", downloadSize: 10, version: 1, userInfo: nil, language: nil, downloadPolicy: .onDemand,
            digest: String(repeating: "0", count: 64))
        let call = try dir.write("call.json", try ExtensionCall.shouldDownload([pack]).encoded())
        let outcome = try ChildProcess.run(
            executable: Self.binaries + "/backlot-apple-sample-extension",
            arguments: ["--backlot-extension-call", call, dir.at("reply.json")], environment: [:],
            until: .now + .seconds(60))
        #expect(outcome.succeeded, "\(String(decoding: outcome.output, as: UTF8.self))")
        let reply = try JSONReader(source: "reply.json").read(try dir.read("reply.json")).root
        #expect(reply["download"]?.arrayElements?.compactMap(\.stringValue) == ["Tutorial"], "the pack it accepts")
    }
}
