import BacklotBasics
import BacklotTestSupport
import Foundation
import Testing

/// `backlot serve --tls auto` with its name-constrained local CA, as a real process: curl trusts
/// it for localhost and 127.0.0.1 with `--cacert`, and a restart asked for a name the CA does not
/// permit stops with the message that says what to do.
@Suite(.serialized) struct LocalCAServeTests {
    func run(_ executable: String, _ arguments: [String]) throws -> (status: Int32?, output: String) {
        let outcome = try ChildProcess.run(
            executable: executable, arguments: arguments, environment: ProcessInfo.processInfo.environment,
            until: .now + .seconds(60))
        return (outcome.exitStatus, String(decoding: outcome.output, as: UTF8.self))
    }

    @Test func curlTrustsTheConstrainedCAAndANewNameIsRefused() throws {
        let dir = try TemporaryDirectory("serve-local-ca")
        defer { dir.remove() }
        let ca = dir.at("data/tls/ca.pem")
        do {
            let server = try ServerProcessTests.Server(
                data: dir.at("data"), arguments: ["--tls", "auto", "--hostname", "assets.test"])
            defer { _ = server.terminate() }
            let port = try #require(URL(string: server.baseURL)?.port)
            for url in [server.baseURL, "https://localhost:\(port)/"] {
                let (status, output) = try run(
                    "/usr/bin/curl", ["-sS", "--fail", "--max-time", "20", "--cacert", ca, url + "v1/keys/root.json"])
                #expect(status == 0 && output.contains("application/vnd.backlot.root+json"), "\(url): \(output)")
            }
            // Served through the name it was configured with (resolved to 127.0.0.1 by curl).
            let (status, output) = try run(
                "/usr/bin/curl",
                [
                    "-sS", "--fail", "--max-time", "20", "--cacert", ca, "--resolve", "assets.test:\(port):127.0.0.1",
                    "https://assets.test:\(port)/v1/keys/root.json",
                ])
            #expect(status == 0, "assets.test: \(output)")
            #expect(!server.standardError.contains("without name constraints"), "\(server.standardError)")
        }
        let (_, text) = try run("/usr/bin/openssl", ["x509", "-in", ca, "-noout", "-text"])
        #expect(text.contains("X509v3 Name Constraints: critical"), "\(text)")
        #expect(
            (try? String(contentsOfFile: dir.at("data/tls/ca-names.txt"), encoding: .utf8))
                == "localhost\nassets.test\n127.0.0.1\n::1\n")

        // A restart for a name the CA does not permit stops before serving, and says why.
        #expect {
            let refused = try ServerProcessTests.Server(
                data: dir.at("data"), arguments: ["--tls", "auto", "--hostname", "other.test"])
            _ = refused.terminate()
        } throws: { error in
            let text = "\(error)"
            return text.contains("does not permit other.test") && text.contains(ca) && text.contains("--tls-cert")
        }
    }
}
