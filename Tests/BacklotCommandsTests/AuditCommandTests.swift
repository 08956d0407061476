import BacklotBasics
import BacklotCommands
import BacklotJSON
import BacklotRepository
import BacklotServer
import BacklotTestSupport
import Foundation
import Testing

/// `backlot audit` against a real server over HTTPS: the trail with its actors, `--json`,
/// filters, and refusals.
@Suite(.serialized) struct AuditCommandTests {
    @Test func theAuditCommandPrintsWhoChangedWhatNewestFirst() throws {
        let dir = try TemporaryDirectory("cli-audit")
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
        #expect(run(["apps", "create", "com.example.game"], token: admin).0 == 0)
        #expect(run(["apps", "create", "com.example.other"], token: admin).0 == 0)
        let reader = run(["tokens", "create", "--role", "reader", "--label", "wall\u{1b}screen"], token: admin)
        #expect(reader.0 != 0, "a label with an escape is refused")
        let token = run(["tokens", "create", "--role", "reader", "--label", "wall screen"], token: admin).1
            .trimmingCharacters(in: .whitespacesAndNewlines)

        let listed = run(["audit"], token: token)
        #expect(listed.0 == 0, "\(listed)")
        let lines = listed.1.split(separator: "\n")
        #expect(lines.count == 4, "\(listed.1)")
        #expect(lines.first?.contains("initial admin (admin)\ttoken.create\t") == true)
        #expect(lines.first?.contains("tokenLabel=wall screen") == true)
        #expect(lines.last?.contains("local (system)\ttoken.create") == true, "the first token, made on the folder")

        let app = run(["audit", "--app", "com.example.game"], token: token)
        #expect(
            app.1.split(separator: "\n").count == 1 && app.1.contains("app.create\tcom.example.game\tfourEyes=false"))

        let json = run(["audit", "--action", "app.create", "--limit", "1", "--json"], token: token)
        #expect(json.0 == 0)
        let entries = try JSONReader(source: "audit").read(json.1).root["entries"]?.arrayElements ?? []
        #expect(entries.count == 1 && entries.first?["app"]?.stringValue == "com.example.other")
        #expect(entries.first?["actor"]?["role"]?.stringValue == "admin")

        #expect(run(["audit", "--action", "app.explode"], token: token).0 != 0)
        #expect(run(["audit", "--limit", "0"], token: token).0 == 2, "a usage error")
        #expect(run(["audit"]).0 == 2, "no token")
    }
}
