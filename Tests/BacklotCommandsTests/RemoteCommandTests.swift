import BacklotBasics
import BacklotClient
import BacklotCommands
import BacklotRepository
import BacklotServer
import BacklotTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The operator CLI (`apps create`, `tokens create`, `upload`, `release`, `approve`, `versions`,
/// `catalog resign`, `keys rotate`) against a real server over HTTPS with its local CA.
@Suite(.serialized) struct RemoteCommandTests {
    @Test func anOperatorPublishesAPackFromTheCommandLine() async throws {
        let dir = try TemporaryDirectory("cli-remote")
        defer { dir.remove() }
        let directory = try RepositoryDirectory(path: dir.at("data"))
        let repository = try Repository(directory: directory)
        let tls = try LocalTLS.prepare(in: directory, hostnames: [])
        let server = try HostingServer(
            repository: repository, configuration: .init(port: 0, tls: (tls.certificatePEM, tls.privateKeyPEM)))
        defer { server.stop() }
        let admin = try String(contentsOfFile: repository.adminTokenPath, encoding: .utf8).trimmingCharacters(
            in: .whitespacesAndNewlines)
        let remote = ["--server", server.baseURL, "--ca", tls.caCertificatePath]
        func run(_ args: [String], token: String? = nil) -> (Int32, String, String) {
            let io = CapturedIO()
            let status = BacklotCLI.main(args + remote + (token.map { ["--token", $0] } ?? []), io: io)
            return (status, io.standardOutput, io.standardError)
        }
        try SamplePack.writeTree(in: dir)
        let pack = try SamplePack.build(in: dir, manifestJSON: SamplePack.manifest(id: "Levels"))

        #expect(run(["apps", "create", "com.example.game"]).0 == 2, "no token is a usage error")
        #expect(run(["apps", "create", "com.example.game"], token: admin).0 == 0)
        let uploader = run(["tokens", "create", "--role", "uploader"], token: admin).1.trimmingCharacters(
            in: .whitespacesAndNewlines)
        let reviewer = run(["tokens", "create", "--role", "reviewer"], token: admin).1.trimmingCharacters(
            in: .whitespacesAndNewlines)
        #expect(uploader.hasPrefix("blt_") && reviewer.hasPrefix("blt_"))

        let uploaded = run(["upload", pack, "--app", "com.example.game"], token: uploader)
        #expect(uploaded.0 == 0 && uploaded.1.contains("version 1: COMPLETE"), "\(uploaded)")
        let listed = run(["versions", "--app", "com.example.game", "--pack", "Levels", "--json"], token: uploader)
        #expect(listed.1.contains("\"state\": \"COMPLETE\""))

        let requested = run(
            ["release", "--app", "com.example.game", "--pack", "Levels", "--version", "1", "--channel", "production"],
            token: uploader)
        #expect(requested.0 == 0 && requested.1.contains("awaits a reviewer"))
        #expect(
            run(["approve", "--app", "com.example.game", "--request", "1"], token: uploader).0 != 0,
            "an uploader cannot approve")
        #expect(run(["approve", "--app", "com.example.game", "--request", "1"], token: reviewer).0 == 0)
        let catalogPath = repository.publication.catalogPath(app: "com.example.game", channel: .production)
        #expect(FileSystem.exists(catalogPath))

        // A corrupt archive is refused before upload by the CLI itself.
        var bytes = try dir.read("out.pack")
        bytes[10] ^= 1
        try Data(bytes).write(to: URL(fileURLWithPath: dir.at("bad.pack")))
        #expect(run(["upload", dir.at("bad.pack"), "--app", "com.example.game"], token: uploader).0 != 0)

        // A device installs it; a damaged file is found and repaired from the command line.
        let catalog = server.baseURL + "v1/apps/com.example.game/production/catalog.json"
        let device = [
            "--catalog", catalog, "--trust", directory.publicKeyPath, "--ca", tls.caCertificatePath, "--container",
            dir.at("device"),
        ]
        let fetched = CapturedIO(isTerminal: true)
        let fetchedStatus = await commandLineOnThread(["fetch"] + device + ["--json"], io: fetched)
        #expect(fetchedStatus == 0, "\(fetched.standardError)")
        #expect(fetched.standardError.isEmpty, "no bar under --json")
        // On a terminal the bar counts the bytes downloaded against the download's size, and ends at 100 %.
        let drawn = CapturedIO(isTerminal: true)
        let other = [
            "--catalog", catalog, "--trust", directory.publicKeyPath, "--ca", tls.caCertificatePath, "--container",
            dir.at("device-2"),
        ]
        let drawnStatus = await commandLineOnThread(["fetch"] + other, io: drawn)
        #expect(drawnStatus == 0, "\(drawn.standardError)")
        let bar = (drawn.standardError.split(separator: "\r").last.map(String.init) ?? "").replacingOccurrences(
            of: "\u{1B}[K", with: ""
        ).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(bar.contains("fetching Levels") && bar.contains("100%"), "\(fetched.standardError)")
        let sizes =
            bar.components(separatedBy: "100%  ").last?.components(separatedBy: "  ").first?.components(
                separatedBy: " / ") ?? []
        #expect(sizes.count == 2 && sizes[0] == sizes[1], "done equals the total: \(bar)")
        #expect(fetched.standardOutput.contains("\"pack\": \"Levels\""))
        let status = CapturedIO()
        #expect(BacklotCLI.main(["status", "--container", dir.at("device"), "--json"], io: status) == 0)
        #expect(status.standardOutput.contains("\"pack\": \"Levels\""))
        let container = try ClientContainer(path: dir.at("device"))
        let installed = try #require(try container.installed().first)
        let installedFolder = container.releaseFolder(installed.id, digest: installed.digest)
        chmod(installedFolder + "/readme.txt", 0o644)
        try Data("altered".utf8).write(to: URL(fileURLWithPath: installedFolder + "/readme.txt"))
        let check = CapturedIO()
        #expect(BacklotCLI.main(["verify", "--container", dir.at("device")], io: check) == 1)
        #expect(check.standardOutput.contains("damaged Levels: readme.txt"))
        let repair = CapturedIO()
        let repairStatus = await commandLineOnThread(["verify", "--repair"] + device, io: repair)
        #expect(repairStatus == 0, "\(repair.standardError)")
        #expect(BacklotCLI.main(["verify", "--container", dir.at("device")], io: CapturedIO()) == 0)
        #expect(
            BacklotCLI.main(["remove", "--container", dir.at("device"), "--pack", "Levels"], io: CapturedIO()) == 0)

        let io = CapturedIO()
        #expect(BacklotCLI.main(["catalog", "resign", "--data", dir.at("data")], io: io) == 0, "\(io.standardError)")
        #expect(io.standardOutput.contains("Re-signed 1 catalog"))
        let rotated = CapturedIO()
        #expect(
            BacklotCLI.main(["keys", "rotate", "--data", dir.at("data")], io: rotated) == 0, "\(rotated.standardError)")
        #expect(rotated.standardOutput.contains("Published key list 2"), "\(rotated.standardOutput)")
    }
}
