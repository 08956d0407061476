import BacklotAgent
import BacklotBasics
import BacklotCommands
import BacklotContainer
import BacklotCrypto
import BacklotFormat
import BacklotStore
import BacklotTestSupport
import Foundation
import Testing

/// Exit status 2 for invalid input whatever its form: numbers that do not fit, inputs that are
/// missing, not packs, or not containers; and errors that never overwrite a progress bar.
@Suite struct InputErrorTests {
    func run(_ args: [String], terminal: Bool = false) -> (status: Int32, out: String, err: String) {
        let io = CapturedIO(isTerminal: terminal)
        let status = BacklotCLI.main(args, io: io)
        return (status, io.standardOutput, io.standardError)
    }

    /// What no whole-number option takes.
    static let badNumbers = [
        "9223372036854775808", "18446744073709551616", "1000000000000000000000000000000", "-9223372036854775809",
        "-1", "1.5", "1e400", "1e3", "+3", "0x10", " 4", "abc", "",
    ]

    @Test(arguments: [
        ("package", "level"), ("package", "jobs"), ("package", "chunk-size"), ("verify", "jobs"), ("extract", "jobs"),
    ])
    func aNumericOptionThatDoesNotFitExitsTwoAndNamesIt(command: String, option: String) throws {
        let dir = try TemporaryDirectory("cli-numbers")
        defer { dir.remove() }
        var base = [command, dir.at("in.json")]
        if command != "verify" { base += ["-o", dir.at("out")] }
        for value in Self.badNumbers {
            let r = run(base + ["--\(option)", value])
            #expect(r.status == 2, "--\(option) \(value): \(r.err)")
            #expect(r.err.contains("--\(option) must be a whole number from"), "--\(option) \(value): \(r.err)")
        }
    }

    @Test func assetPackVersionsThatDoNotFitExitTwo() throws {
        for value in ["18446744073709551616", "-1", "1.5", "1e3", "x"] {
            let r = run([
                "download-manifest", "create", "a.aar", "--download-base-url", "https://cdn.example.com/", "--platform",
                "ios",
                "-o", "out.json", "--asset-pack-versions", value,
            ])
            #expect(
                r.status == 2 && r.err.contains("--asset-pack-versions must be whole numbers"), "\(value): \(r.err)")
        }
    }

    /// A server that does not answer is a failure of the transfer (exit 1, named as such), never
    /// "no such file": the catalog's URL is on the command line, but it is not a path.
    @Test func aServerThatDoesNotAnswerIsNotAMissingFile() async throws {
        let dir = try TemporaryDirectory("cli-no-server")
        defer { dir.remove() }
        let key64 = Data(try Ed25519.PrivateKey().publicKey.rawRepresentation).base64EncodedString()
        let key = try dir.write("root.pub", key64 + "\n")
        let nobody = try FreePort.bound()  // bound, not listening: a connection is refused
        let port = nobody.port
        let url = "http://127.0.0.1:\(port)/v1/apps/game/internal/catalog.json"
        let io = CapturedIO()
        let status = await commandLineOnThread(
            ["fetch", "--container", dir.at("device"), "--catalog", url, "--trust", key, "--no-report"], io: io)
        #expect(status == 1, "\(status): \(io.standardError)")
        #expect(
            !io.standardError.contains("no such file") && io.standardError.contains("127.0.0.1:\(port)"),
            "\(io.standardError)")
    }

    /// A configuration whose catalog URL and key are fine, with one more key.
    func agentConfig(_ dir: TemporaryDirectory, key: String, value: String) throws -> String {
        let key64 = Data(try Ed25519.PrivateKey().publicKey.rawRepresentation).base64EncodedString()
        _ = try dir.write("root.pub", key64 + "\n")
        return try dir.write(
            "agent.json",
            """
            {"BacklotCatalogURL": "http://127.0.0.1:9/v1/apps/game/internal/catalog.json", "BacklotTrustedKey": "root.pub", "\(key)": \(value)}
            """)
    }

    @Test(arguments: [
        "BacklotPollInterval", "BacklotExtensionTimeLimit", "BacklotExtensionDailyBudget",
        "BacklotPeriodicCheckInterval",
        "BacklotRefreshTaskBudget", "BacklotTaskFailureBackoff", "BacklotBandwidthLimit", "BacklotMaximumRangeBytes",
        "BacklotMinimumFreeSpace", "BAMaxInstallSize",
    ])
    func anAgentConfigurationNumberThatDoesNotFitExitsTwoAndNamesTheKey(key: String) throws {
        let dir = try TemporaryDirectory("cli-config")
        defer { dir.remove() }
        let isBytes =
            key.hasSuffix("Limit") && key.hasPrefix("BacklotBandwidth") || key.hasSuffix("Bytes")
            || key.hasSuffix("Size") || key.hasSuffix("Space")
        let values =
            [
                "9223372036854775808", "18446744073709551616", "1000000000000000000000000000000", "1e400", "-1e400",
                "-1", #""60""#, "null",
            ]
            + (isBytes ? ["1.5", "1e3"] : ["0", "1e30"])
            // Below their floors the agent's rounds, or its catalog checks, would follow without rest.
            + (["BacklotPollInterval", "BacklotPeriodicCheckInterval"].contains(key) ? ["1e-9", "0.001"] : [])
        for value in values {
            let config = try agentConfig(dir, key: key, value: value)
            for command in [["agent", "--once"], ["notify", "--app-install"]] {
                let r = run(command + ["--container", dir.at("c"), "--config", config])
                #expect(r.status == 2, "\(command[0]) \(key): \(value): \(r.err)")
                #expect(r.err.contains(key), "\(command[0]) \(key): \(value): \(r.err)")
            }
        }
    }

    @Test func aShortFileIsNotAPackUnlessItStartsLikeOne() throws {
        let dir = try TemporaryDirectory("cli-short")
        defer { dir.remove() }
        for command in ["inspect", "verify"] {
            let text = run([command, try dir.write("six.bin", "hello!")])
            #expect(text.status == 2 && text.err.contains("not a Backlot pack"), "\(text.err)")
            let empty = run([command, try dir.write("empty.pack", "")])
            #expect(empty.status == 2 && empty.err.contains("not a Backlot pack"), "\(empty.err)")
            let truncated = run([command, try dir.write("cut.pack", "BKLTPA")])
            #expect(truncated.status == 1 && truncated.err.contains("shorter than a pack header"), "\(truncated.err)")
            let cutHeader = run([command, try dir.write("cut2.pack", Array("BKLTPACK".utf8) + [1, 0, 0])])
            #expect(cutHeader.status == 1 && cutHeader.err.contains("shorter than a pack header"), "\(cutHeader.err)")
        }
    }

    /// Every command that reads a file named on its command line, that file missing: exit status 2.
    @Test func aMissingInputExitsTwoForEveryCommand() throws {
        let dir = try TemporaryDirectory("cli-missing")
        defer { dir.remove() }
        let missing = dir.at("missing")
        let table: [[String]] = [
            ["evaluate", missing],
            ["package", missing, "-o", dir.at("out.pack")],
            ["inspect", missing],
            ["verify", missing],
            ["extract", missing, "-o", dir.at("out")],
            ["diff", missing, missing + "2"],
            ["plist", "check", missing],
            [
                "download-manifest", "create", missing + ".aar", "--download-base-url", "https://cdn.example.com/",
                "--platform", "ios", "-o", dir.at("m.json"),
            ],
            ["clip", "size", missing],
            ["clip", "match", "https://example.com/a", "--experiences", missing],
            ["agent", "--once", "--container", dir.at("c"), "--config", missing],
            ["notify", "--app-install", "--container", dir.at("c"), "--config", missing],
            ["simulate", "--periodic", "--container", dir.at("c"), "--config", missing],
            ["template", "-o", missing + "/folder/M.json"],
        ]
        for args in table {
            let r = run(args)
            #expect(r.status == 2, "\(args.joined(separator: " ")): \(r.err)")
            #expect(r.err.hasPrefix("error: ") && r.err.contains("missing"), "\(args.joined(separator: " ")): \(r.err)")
        }
        // A folder where a file is expected cannot be read: invalid input too.
        for args in [["inspect", dir.path], ["evaluate", dir.path], ["plist", "check", dir.path]] {
            let r = run(args)
            #expect(r.status == 2, "\(args.joined(separator: " ")): \(r.err)")
        }
    }

    @Test func aFolderThatIsNotAContainerIsSaidToBeOne() throws {
        let dir = try TemporaryDirectory("cli-container")
        defer { dir.remove() }
        let table: [([String], String)] = [
            (["status", "--container", dir.at("nothing")], dir.at("nothing")),
            (["status", "--container", dir.path], dir.path),
            (["status", "--json", "--container", dir.path], dir.path),
            (["remove", "--container", dir.path, "--pack", "Levels"], dir.path),
            (["verify", "--container", dir.path], dir.path),
            (["clip", "handoff", "--from", dir.path, "--to", dir.at("app")], dir.path),
        ]
        for (args, named) in table {
            let r = run(args)
            #expect(r.status == 2, "\(args.joined(separator: " ")): \(r.err)")
            #expect(
                r.err.contains(
                    "\(named) is not a Backlot container (no state.sqlite): run fetch first or check the path"),
                "\(r.err)")
            #expect(r.out.isEmpty)
        }
        // Nothing was created on the way.
        #expect(
            !FileSystem.exists(dir.at("state.sqlite")) && !FileSystem.exists(dir.at("nothing"))
                && !FileSystem.exists(dir.at("packs")))
        let agent = run(["agent", "status", "--container", dir.path])
        #expect(agent.status == 2 && agent.err.contains("no agent has used this container yet"))
    }

    @Test func anErrorWhileABarIsDrawnStartsOnItsOwnLine() throws {
        let dir = try TemporaryDirectory("cli-bar")
        defer { dir.remove() }
        try SamplePack.writeTree(in: dir)
        let pack = try SamplePack.build(in: dir)
        // The last byte before the index belongs to the last chunk: earlier chunks verify (and draw the bar) first.
        let at = Int(try PackReader(path: pack).header.indexOffset) - 1
        var bytes = try dir.read("out.pack")
        bytes[at] ^= 0xFF
        _ = try dir.write("out.pack", bytes)
        let r = run(["verify", pack, "--jobs", "1"], terminal: true)
        #expect(r.status == 1)
        try #require(r.err.contains("\rverifying ["), "no bar was drawn: \(r.err.debugDescription)")
        #expect(r.err.contains("\u{1B}[K\nerror: "), "\(r.err.debugDescription)")
        #expect(!r.err.contains("\u{1B}[Kerror"))
        // A bar that finishes ends its line once.
        let good = try SamplePack.build(in: dir, name: "good.pack")
        let ok = run(["verify", good], terminal: true)
        #expect(ok.status == 0)
        #expect(ok.err.hasSuffix("\u{1B}[K\n") && !ok.err.hasSuffix("\n\n"), "\(ok.err.debugDescription)")
    }

    /// The extension's runtime is a REAL another process writes: shown without an integer conversion.
    @Test func agentStatusShowsAStoredRuntimeThatNoIntegerHolds() throws {
        let dir = try TemporaryDirectory("cli-runtime")
        defer { dir.remove() }
        _ = try AgentStore(containerPath: dir.path)
        let db = try Database(path: dir.at("agent.sqlite"))
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "UTC")
        f.dateFormat = "yyyy-MM-dd"
        for seconds in [1e300, -1e300, Double.infinity, 9.3e18] {
            try db.transaction { tx in
                _ = try tx.run(
                    "INSERT OR REPLACE INTO extension_runtime(day, seconds) VALUES (?, ?)",
                    [.text(f.string(from: Date())), .real(seconds)])
            }
            let r = run(["agent", "status", "--container", dir.path])
            #expect(r.status == 0, "\(seconds): \(r.err)")
            #expect(r.out.contains("extension runtime today: "), "\(seconds)")
        }
    }

    /// A download manifest's version is read from the file: the next one after Int.max is an error.
    @Test func updatingAManifestAtTheLargestVersionExitsTwo() throws {
        let dir = try TemporaryDirectory("cli-dm")
        defer { dir.remove() }
        try SamplePack.writeTree(in: dir)
        let pack = try SamplePack.build(
            in: dir, manifestJSON: SamplePack.manifest(id: "Levels", platforms: #"["iOS","linux"]"#))
        let out = dir.at("manifest.json")
        #expect(
            run([
                "download-manifest", "create", pack, "--platform", "ios", "--download-base-url",
                "https://cdn.example.com/packs/",
                "--asset-pack-versions", String(Int.max), "-o", out,
            ]).status == 0)
        let r = run(["download-manifest", "update", out, pack, "--download-base-url", "https://cdn.example.com/packs"])
        #expect(r.status == 2, "\(r.err)")
        #expect(r.err.contains("the next version of Levels after \(Int.max) overflows"), "\(r.err)")
        // A version that does not fit an Int at all is refused when the manifest is read.
        let text = String(decoding: try dir.read("manifest.json"), as: UTF8.self).replacingOccurrences(
            of: String(Int.max), with: "18446744073709551616")
        _ = try dir.write("manifest.json", text)
        let huge = run([
            "download-manifest", "update", out, pack, "--download-base-url", "https://cdn.example.com/packs",
        ])
        #expect(huge.status == 2 && huge.err.contains("version"), "\(huge.err)")
    }
}
