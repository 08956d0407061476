import BacklotBasics
import BacklotCommands
import BacklotRepository
import BacklotServer
import BacklotTestSupport
import Foundation
import Testing

/// The operator CLI (`apps create`, `tokens create`, `upload`, `release`, `approve`, `versions`,
/// `catalog resign`, `keys rotate`) against a real server over HTTPS with its local CA.
@Suite(.serialized) struct RemoteCommandTests {
    @Test func anOperatorPublishesAPackFromTheCommandLine() throws {
        let dir = try TemporaryDirectory("cli-remote")
        defer { dir.remove() }
        let directory = try RepositoryDirectory(path: dir.at("data"))
        let repository = try Repository(directory: directory)
        let tls = try LocalTLS.prepare(in: directory, hostnames: [])
        let server = try HostingServer(repository: repository, configuration: .init(port: 0, tls: (tls.certificatePEM, tls.privateKeyPEM)))
        defer { server.stop() }
        let admin = try String(contentsOfFile: repository.adminTokenPath, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
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
        let uploader = run(["tokens", "create", "--role", "uploader"], token: admin).1.trimmingCharacters(in: .whitespacesAndNewlines)
        let reviewer = run(["tokens", "create", "--role", "reviewer"], token: admin).1.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(uploader.hasPrefix("blt_") && reviewer.hasPrefix("blt_"))

        let uploaded = run(["upload", pack, "--app", "com.example.game"], token: uploader)
        #expect(uploaded.0 == 0 && uploaded.1.contains("version 1: COMPLETE"), "\(uploaded)")
        let listed = run(["versions", "--app", "com.example.game", "--pack", "Levels", "--json"], token: uploader)
        #expect(listed.1.contains("\"state\": \"COMPLETE\""))

        let requested = run(["release", "--app", "com.example.game", "--pack", "Levels", "--version", "1", "--channel", "production"], token: uploader)
        #expect(requested.0 == 0 && requested.1.contains("awaits a reviewer"))
        #expect(run(["approve", "--app", "com.example.game", "--request", "1"], token: uploader).0 != 0, "an uploader cannot approve")
        #expect(run(["approve", "--app", "com.example.game", "--request", "1"], token: reviewer).0 == 0)
        let catalogPath = repository.catalogPath(app: "com.example.game", channel: .production)
        #expect(FileSystem.exists(catalogPath))

        // A corrupt archive is refused before upload by the CLI itself.
        var bytes = try dir.read("out.pack")
        bytes[10] ^= 1
        try Data(bytes).write(to: URL(fileURLWithPath: dir.at("bad.pack")))
        #expect(run(["upload", dir.at("bad.pack"), "--app", "com.example.game"], token: uploader).0 != 0)

        let io = CapturedIO()
        #expect(BacklotCLI.main(["catalog", "resign", "--data", dir.at("data")], io: io) == 0)
        #expect(io.standardOutput.contains("Re-signed 1 catalog"))
        #expect(BacklotCLI.main(["keys", "rotate", "--data", dir.at("data")], io: io) == 0)
        #expect(io.standardOutput.contains("Published key list 2"))
    }
}
