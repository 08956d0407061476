import BacklotBasics
import BacklotHTTPClient
import BacklotTestSupport
import Foundation
import Testing

/// A server whose certificate the client does not trust is a TLS error that says what is wrong
/// with the certificate and what to trust, in the HTTP client, in the agent and on the command
/// line: never a network error, never "waiting for the network".
@Suite(.serialized) struct TLSTrustTests {
    @Test func anUntrustedCertificateIsATLSErrorEverywhere() throws {
        let dir = try TemporaryDirectory("tls-trust")
        defer { dir.remove() }
        let server = try ServerProcessTests.Server(data: dir.at("data"), tls: "auto")
        defer { _ = server.terminate() }
        let catalogURL = server.baseURL + "v1/apps/com.example.game/production/catalog.json"

        // The client library: code tls, the certificate's problem, a hint naming what to trust.
        do {
            _ = try HTTPClient().send("GET", catalogURL)
            Issue.record("an untrusted certificate was accepted")
        } catch let e as BacklotError {
            #expect(e.code == .tls, "\(e)")
            #expect(e.message.contains("certificate"), "\(e.message)")
            #expect(e.hint?.contains("CA") == true)
        }
        // Trusting the server's CA mends it (the same request, the same server).
        #expect(throws: Never.self) { _ = try HTTPClient(caFile: dir.at("data/tls/ca.pem")).send("GET", catalogURL) }

        // The agent's event: kept queued, reported as a TLS error with exit status 1.
        try dir.write(
            "agent.json",
            #"{"BacklotCatalogURL": "\#(catalogURL)", "BacklotTrustedKey": "\#(dir.at("data/root.pub"))"}"#)
        let (status, output) = try runToEnd(
            ProcessTests.binary,
            ["notify", "--container", dir.at("c"), "--app-install", "--config", dir.at("agent.json")])
        #expect(status == 1, "\(output)")
        #expect(output.contains("TLS") && output.contains("certificate"), "\(output)")
        #expect(!output.contains("waiting for the network"), "\(output)")
    }
}
