import BacklotBasics
import BacklotCommands
import BacklotFormat
import BacklotTestSupport
import Foundation
import Testing

/// The `backlot` commands, driven in-process with captured output.
@Suite struct CommandLineTests {
    func run(_ args: [String]) -> (status: Int32, out: String, err: String) {
        let io = CapturedIO()
        let status = BacklotCLI.main(args, io: io)
        return (status, io.standardOutput, io.standardError)
    }

    @Test(arguments: ["template", "evaluate", "package", "inspect", "verify", "extract", "diff"])
    func everyCommandHasHelp(_ command: String) {
        let r = run([command, "--help"])
        #expect(r.status == 0)
        #expect(r.out.contains("Usage: backlot \(command)"))
        #expect(r.out.contains("--help"))
    }

    /// The version and the build it is (what a benchmark prints as the build it measured).
    @Test func versionSaysTheBuild() {
        let r = run(["--version"])
        #expect(r.status == 0)
        #expect(r.out == "backlot \(BacklotVersion.current) (\(BacklotVersion.buildConfiguration) build)\n")
        #expect(["debug", "release"].contains(BacklotVersion.buildConfiguration))
    }

    @Test func usageErrorsExitTwoAndSayWhatToDo() {
        #expect(run([]).status == 2)
        let unknown = run(["packge"])
        #expect(unknown.status == 2 && unknown.err.contains("did you mean 'package'"))
        let option = run(["package", "M.json", "--ouput", "x"])
        #expect(
            option.status == 2 && option.err.contains("unknown option '--ouput'")
                && option.err.contains("did you mean --output?"))
        let missing = run(["package", "M.json"])
        #expect(missing.status == 2 && missing.err.contains("--output OUT.pack is required"))
        let noArg = run(["verify"])
        #expect(noArg.status == 2 && noArg.err.contains("missing argument PACK"))
        let badNumber = run(["package", "M.json", "-o", "x.pack", "--level", "42"])
        #expect(badNumber.status == 2 && badNumber.err.contains("--level must be a whole number from 1 to 19"))
        #expect(run(["--version"]).out.hasPrefix("backlot "))
    }

    @Test func templateFilledInPackagesInspectsVerifiesExtractsAndDiffs() throws {
        let dir = try TemporaryDirectory("cli")
        defer { dir.remove() }
        try SamplePack.writeTree(in: dir)
        let manifest = dir.at("M.json")
        #expect(run(["template", "-o", manifest]).status == 0)
        // Unfilled placeholders are refused with exit status 2 and no pack is written.
        let unfilled = run(["package", manifest, "-o", dir.at("x.pack"), "--source-root", dir.at("src")])
        #expect(unfilled.status == 2)
        #expect(unfilled.err.contains("still the template's placeholder"))
        #expect(!FileSystem.exists(dir.at("x.pack")))

        var text = String(decoding: try dir.read("M.json"), as: UTF8.self)
        text = text.replacingOccurrences(of: "[Asset-Pack ID]", with: "Tutorial")
            .replacingOccurrences(of: "[Path to File]", with: "readme.txt")
            .replacingOccurrences(of: "[Path to Directory]", with: "Levels")
        try dir.write("M.json", text)

        let evaluated = run(["evaluate", manifest, "--source-root", dir.at("src"), "--json"])
        #expect(evaluated.status == 0, "\(evaluated.err)")
        #expect(
            evaluated.out.contains("\"path\": \"Levels/level1.dat\"")
                && evaluated.out.contains("\"pack\": \"Tutorial\""))

        let packed = run([
            "package", manifest, "-o", dir.at("v1.pack"), "--source-root", dir.at("src"), "--chunk-size", "16",
        ])
        #expect(packed.status == 0, "\(packed.err)")
        #expect(packed.out.contains("Packaged Tutorial") && packed.out.contains("deduplicated"))

        let again = run(["package", manifest, "-o", dir.at("v1.pack"), "--source-root", dir.at("src")])
        #expect(again.status == 2 && again.err.contains("--force"))

        let inspected = run(["inspect", dir.at("v1.pack"), "--json"])
        #expect(inspected.status == 0)
        #expect(
            inspected.out.contains("\"pack\": \"Tutorial\"") && inspected.out.contains("\"digest\"")
                && inspected.out.contains("\"fileCount\""))
        #expect(
            run(["inspect", dir.at("v1.pack")]).out.contains(
                "policy        essential on firstInstallation, subsequentUpdate"))

        #expect(run(["verify", dir.at("v1.pack")]).out.hasPrefix("OK "))
        let extracted = run(["extract", dir.at("v1.pack"), "-o", dir.at("out")])
        #expect(extracted.status == 0)
        #expect(try dir.read("out/Levels/level1.dat") == dir.read("src/Levels/level1.dat"))

        var level = try dir.read("src/Levels/level1.dat")
        level[1000] ^= 1
        try dir.write("src/Levels/level1.dat", level)
        #expect(
            run(["package", manifest, "-o", dir.at("v2.pack"), "--source-root", dir.at("src"), "--chunk-size", "16"])
                .status == 0)
        let diff = run(["diff", dir.at("v1.pack"), dir.at("v2.pack"), "--json"])
        #expect(diff.status == 0)
        for key in ["downloadBytes", "downloadChunkCount", "newPackBytes"] { #expect(diff.out.contains("\"\(key)\"")) }
        #expect(diff.out.contains("\"downloadChunkCount\": 1"))
        // With a delta the one changed chunk is rebuilt from the old one: less than without.
        #expect(
            diff.out.contains("\"deltaChunkCount\": 1") && diff.out.contains("\"deltaWholeChunkCount\": 0"),
            "\(diff.out)")
        let number = { (key: String) -> Int in
            guard let r = diff.out.range(of: "\"\(key)\": ") else { return -1 }
            return Int(diff.out[r.upperBound...].prefix { $0.isNumber }) ?? -1
        }
        #expect(
            number("deltaDownloadBytes") > 0 && number("deltaDownloadBytes") < number("downloadBytes"), "\(diff.out)")
    }

    @Test func aCorruptPackFailsVerifyWithStatusOne() throws {
        let dir = try TemporaryDirectory("cli-corrupt")
        defer { dir.remove() }
        try SamplePack.writeTree(in: dir)
        let path = try SamplePack.build(in: dir)
        var bytes = try dir.read("out.pack")
        bytes[200] ^= 0xFF
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let r = run(["verify", path])
        #expect(r.status == 1)
        #expect(r.err.contains("chunk") && r.err.contains("offset"))
        let notPack = run(["verify", dir.at("src/readme.txt")])
        #expect(notPack.status == 2 && notPack.err.contains("not a Backlot pack"))
        #expect(run(["verify", dir.at("missing.pack")]).status == 2)  // a missing input is invalid input
    }

    @Test func anInvalidManifestExitsTwoNamingLineColumnAndPath() throws {
        let dir = try TemporaryDirectory("cli-bad")
        defer { dir.remove() }
        try dir.write("src/a.txt", "a")
        try dir.write(
            "M.json",
            """
            {
              "assetPackID": "Tutorial",
              "downloadPolicy": {"onDemand": {}, "essential": {"installationEventTypes": ["firstInstallation"]}},
              "fileSelectors": [{"file": "a.txt"}],
              "platforms": ["iOS"]
            }
            """)
        let r = run(["package", dir.at("M.json"), "-o", dir.at("o.pack"), "--source-root", dir.at("src")])
        #expect(r.status == 2)
        #expect(
            r.err.contains("M.json:3:21: downloadPolicy: give exactly one of essential, prefetch, onDemand (found 2)"),
            "\(r.err)")
        #expect(!FileSystem.exists(dir.at("o.pack")))
    }
}

/// Output written to a terminal, for the progress bar.
final class TerminalIO: CommandIO, @unchecked Sendable {
    private let lock = NSLock()
    private var errText = ""
    func out(_ text: String) {}
    func err(_ text: String) {
        lock.lock()
        errText += text
        lock.unlock()
    }
    var isTerminal: Bool { true }
    var standardError: String {
        lock.lock()
        defer { lock.unlock() }
        return errText
    }
}

struct ProgressOutputTests {
    @Test func aTerminalGetsARedrawnBarAndAPipeGetsNothingForSmallJobs() throws {
        let dir = try TemporaryDirectory("progress")
        defer { dir.remove() }
        try SamplePack.writeTree(in: dir)
        let path = try SamplePack.build(in: dir)
        let tty = TerminalIO()
        #expect(BacklotCLI.main(["verify", path], io: tty) == 0)
        #expect(tty.standardError.contains("\rverifying ["))
        #expect(tty.standardError.contains("100%"))
        let pipe = CapturedIO()
        #expect(BacklotCLI.main(["verify", path], io: pipe) == 0)
        #expect(pipe.standardError.isEmpty)
    }
}

struct DownloadManifestCommandTests {
    @Test func createAndUpdateWriteApplesFormatFromPacksAndAppleArchives() throws {
        let dir = try TemporaryDirectory("dm")
        defer { dir.remove() }
        try SamplePack.writeTree(in: dir)
        let pack = try SamplePack.build(
            in: dir, manifestJSON: SamplePack.manifest(id: "Levels", platforms: #"["iOS","linux"]"#))
        try dir.write("Tutorial.aar", AppleArchiveBuilder.archive(files: [("a.txt", Array("a".utf8))]))
        try dir.write(
            "Tutorial.json",
            #"{"assetPackID":"Tutorial","downloadPolicy":{"onDemand":{}},"fileSelectors":[{"file":"a.txt"}],"platforms":["iOS"]}"#
        )
        try dir.write("Lonely.aar", AppleArchiveBuilder.archive(files: []))
        let io = CapturedIO()
        let out = dir.at("manifest.json")
        #expect(
            BacklotCLI.main(
                [
                    "download-manifest", "create", pack, dir.at("Tutorial.aar"), "--platform", "ios",
                    "--download-base-url", "https://cdn.example.com/packs/", "--asset-pack-versions", "3,1", "-o", out,
                ], io: io) == 0, "\(io.standardError)")
        var manifest = try AppleDownloadManifest.decode(try dir.read("manifest.json"), source: out)
        #expect(manifest.assetPacks.map(\.id) == ["Levels", "Tutorial"])
        #expect(manifest.assetPacks.map(\.version) == [3, 1])
        #expect(manifest.assetPacks[1].url == "https://cdn.example.com/packs/Tutorial")
        #expect(manifest.assetPacks[0].downloadSize == UInt64(try dir.read("out.pack").count))

        #expect(
            BacklotCLI.main(
                [
                    "download-manifest", "update", out, dir.at("Tutorial.aar"), "--download-base-url",
                    "https://cdn.example.com/packs",
                ], io: io) == 0)
        manifest = try AppleDownloadManifest.decode(try dir.read("manifest.json"), source: out)
        #expect(manifest.assetPacks.map(\.version) == [3, 2])

        let lonely = CapturedIO()
        #expect(
            BacklotCLI.main(
                [
                    "download-manifest", "create", dir.at("Lonely.aar"), "--platform", "ios",
                    "--download-base-url", "https://x", "-o", dir.at("m2.json"),
                ], io: lonely) == 2)
        #expect(lonely.standardError.contains("no manifest beside the archive"))
        #expect(
            BacklotCLI.main(
                [
                    "download-manifest", "create", pack, "--platform", "ipados", "--download-base-url", "https://x",
                    "-o", dir.at("m3.json"),
                ], io: lonely) == 2)
    }
}

struct PlistCheckCommandTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("BacklotInfoPlistTests/Fixtures").path

    @Test func checkReportsRulesWithExitStatusesAndJSON() {
        let ok = CapturedIO()
        #expect(BacklotCLI.main(["plist", "check", Self.fixtures + "/valid-self-hosted.binary.plist"], io: ok) == 0)
        #expect(ok.standardOutput.contains("0 errors, 0 warnings"))
        let bad = CapturedIO()
        #expect(
            BacklotCLI.main(["plist", "check", Self.fixtures + "/manifest-http.xml.plist", "--json"], io: bad) == 1)
        #expect(
            bad.standardOutput.contains("\"rule\": \"manifestURL.https\"")
                && bad.standardOutput.contains("\"keyPath\": \"BAManifestURL\""))
        let defined = CapturedIO()
        #expect(
            BacklotCLI.main(
                [
                    "plist", "check", Self.fixtures + "/group-placeholder.xml.plist", "--define",
                    "APP_GROUP_IDENTIFIER=group.x",
                ], io: defined) == 0)
        #expect(defined.standardOutput.contains("0 errors, 0 warnings"))
        let notPlist = CapturedIO()
        #expect(BacklotCLI.main(["plist", "check", #filePath], io: notPlist) == 2)
    }
}

struct ClipCommandTests {
    @Test func linkParseAndMatchFromTheCommandLine() throws {
        let link = CapturedIO()
        #expect(BacklotCLI.main(["clip", "link", "com.example.Clip", "table=12", "note=a b&c"], io: link) == 0)
        #expect(link.standardOutput == "https://appclip.apple.com/id?p=com.example.Clip&table=12&note=a%20b%26c\n")
        let parsed = CapturedIO()
        #expect(
            BacklotCLI.main(
                ["clip", "parse", link.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines), "--json"],
                io: parsed) == 0)
        #expect(parsed.standardOutput.contains("\"value\": \"a b&c\""))
        #expect(BacklotCLI.main(["clip", "link", "com.example.Clip", "x=1", "--demo"], io: CapturedIO()) == 2)
        #expect(BacklotCLI.main(["clip", "parse", "https://example.com/id?p=a.b"], io: CapturedIO()) == 2)

        let dir = try TemporaryDirectory("clip")
        defer { dir.remove() }
        try dir.write(
            "x.json",
            #"{"experiences": [{"id": "shop", "url": "https://example.com/shop"}, {"id": "paris", "url": "https://example.com/shop/paris"}]}"#
        )
        let match = CapturedIO()
        #expect(
            BacklotCLI.main(
                ["clip", "match", "https://example.com/shop/paris/menu", "--experiences", dir.at("x.json")], io: match)
                == 0)
        #expect(match.standardOutput.hasPrefix("paris\t"))
        #expect(
            BacklotCLI.main(
                ["clip", "match", "https://example.com/shopping", "--experiences", dir.at("x.json")], io: CapturedIO())
                == 1)
    }

    @Test func sizeFromTheCommandLine() throws {
        let dir = try TemporaryDirectory("clip-size")
        defer { dir.remove() }
        try dir.write("Clip.app/Clip", [UInt8](repeating: 1, count: 12_000_000))
        try dir.write("Clip.app/Info.plist", [UInt8](repeating: 2, count: 1_000))
        let clip = dir.at("Clip.app")
        // 12,001,000 bytes: over iOS 15's 10 MB, within iOS 16's 15 MB.
        let over = CapturedIO()
        #expect(BacklotCLI.main(["clip", "size", clip, "--min-os", "15"], io: over) == 1)
        #expect(
            over.standardOutput.contains("12.00 MB (12001000 bytes)")
                && over.standardOutput.contains("10.00 MB (10000000 bytes)"))
        #expect(over.standardError.contains("2001000 bytes over the 10.00 MB limit"))
        let within = CapturedIO()
        #expect(BacklotCLI.main(["clip", "size", clip, "--min-os", "16.4", "--json"], io: within) == 0)
        let json = try #require(
            try JSONSerialization.jsonObject(with: Data(within.standardOutput.utf8)) as? [String: Any])
        #expect(
            json["limitBytes"] as? Int == 15_000_000 && json["headroomBytes"] as? Int == 2_999_000
                && json["isOver"] as? Bool == false)
        #expect((json["rule"] as? [String: Any])?["id"] as? String == "ios16")
        #expect((json["largestFiles"] as? [[String: Any]])?.first?["path"] as? String == "Clip")
        // The demo link does not lift an iOS 16 deployment target's limit.
        let demo = CapturedIO()
        #expect(BacklotCLI.main(["clip", "size", clip, "--min-os", "16", "--demo-link", "--json"], io: demo) == 0)
        #expect(
            demo.standardOutput.contains("\"limitBytes\" : 15000000")
                || demo.standardOutput.contains("\"limitBytes\": 15000000"))
        // Bad values name the option: exit status 2.
        for bad in [["--min-os", "seventeen"], ["--invocations", "sideways"], ["--min-os", "1000"]] {
            let io = CapturedIO()
            #expect(BacklotCLI.main(["clip", "size", clip] + bad, io: io) == 2, "\(bad)")
            #expect(io.standardError.contains(bad[0]), "\(io.standardError)")
        }
        #expect(BacklotCLI.main(["clip", "size", dir.at("missing.app")], io: CapturedIO()) == 2)
    }
}
