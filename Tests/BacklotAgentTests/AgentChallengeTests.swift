import BacklotAgent
import BacklotBasics
import BacklotCrypto
import BacklotTestSupport
import Foundation
import Testing

/// A URL download the agent runs that meets a 401 (a real nginx requiring Basic authentication):
/// the app is not there, so the extension is woken for its `backgroundDownload(_:didReceive:)`,
/// and its answer is applied to the transfer.
@Suite(.serialized) struct AgentChallengeTests {
    func run(
        _ settings: [String: Any], tls: LocalCertificateAuthority.Issued? = nil
    ) async throws -> (AgentFixture, NginxFileServer) {
        let protected = try NginxFileServer(seed: 4011, tls: tls)
        let f = try AgentFixture()
        try f.server.publish(id: "Later", seed: 3)
        try f.extensionSettings(
            settings.merging(["downloads": [["identifier": "protected", "url": protected.url.absoluteString]]]) {
                a, _ in
                a
            })
        let agent = try f.agent()
        try agent.store.enqueue(.install, bypassBudget: false)
        await agent.round()
        return (f, protected)
    }

    @Test func theExtensionsCredentialIsSentAndTheDownloadFinishes() async throws {
        let (f, protected) = try await run([
            "challenge": "credentials", "credentials": ["user": "game", "password": "secret"],
        ])
        #expect(eventually { f.extensionLog.contains("finished protected moved=true") }, "\(f.extensionLog)")
        #expect(
            f.extensionLog.contains(
                "challenge protected realm=Levels failures=0 method=NSURLAuthenticationMethodHTTPBasic"),
            "\(f.extensionLog)")
        let received = try Data(contentsOf: URL(fileURLWithPath: f.container + "/extension-received/protected"))
        #expect(Array(received) == protected.bytes)
        #expect(f.lines.all.contains { $0.contains("answered its authentication challenge: useCredential") })
        #expect(!f.lines.all.contains { $0.contains("secret") }, "the credential is never logged")
        // The call's files, which held the password, are gone.
        #expect(
            eventually {
                (try? FileManager.default.contentsOfDirectory(atPath: f.container + "/.extension-calls"))?.isEmpty
                    != false
            }, "\((try? FileManager.default.contentsOfDirectory(atPath: f.container + "/.extension-calls")) ?? [])")
    }

    @Test func aRefusedCredentialIsAskedForAgainThenTheDownloadFails() async throws {
        let (f, protected) = try await run([
            "challenge": "credentials", "credentials": ["user": "game", "password": "wrong"],
        ])
        defer { withExtendedLifetime(protected) {} }  // nginx runs until the end
        #expect(
            eventually { f.extensionLog.contains { $0.hasPrefix("failed protected: ") && $0.contains("401") } },
            "\(f.lines.all) \(f.extensionLog)")
        let asked = f.extensionLog.filter { $0.hasPrefix("challenge protected") }
        #expect(asked.map { $0.contains("failures=\(asked.firstIndex(of: $0)!)") } == [true, true, true], "\(asked)")
    }

    @Test(arguments: ["cancel", "default"])
    func aCancelledOrDefaultAnswerFailsTheDownload(_ answer: String) async throws {
        let (f, protected) = try await run(["challenge": answer])
        defer { withExtendedLifetime(protected) {} }
        let why = answer == "cancel" ? "was cancelled" : "401"
        #expect(
            eventually { f.extensionLog.contains { $0.hasPrefix("failed protected: ") && $0.contains(why) } },
            "\(f.extensionLog)")
        #expect(f.extensionLog.filter { $0.hasPrefix("challenge protected") }.count == 1)
        #expect(!FileManager.default.fileExists(atPath: f.container + "/extension-received/protected"))
    }

    @Test func anHTTPSServersCertificatesArePutToTheExtension() async throws {
        let issued = try LocalCertificateAuthority.create(commonName: "Extension CA").issueServerCertificate(
            dnsNames: ["localhost"], ipAddresses: ["127.0.0.1"])
        let leaf = SHA256.hash(CertificateKey.derCertificates(inPEM: issued.certificatePEM)[0]).hex
        // Pinned: trusted though no CA the agent knows signed it; then the 401 is answered too.
        let (f, protected) = try await run(
            ["trustSHA256": leaf, "challenge": "credentials", "credentials": ["user": "game", "password": "secret"]],
            tls: issued)
        #expect(eventually { f.extensionLog.contains("finished protected moved=true") }, "\(f.extensionLog)")
        #expect(f.extensionLog.contains("server trust protected certificates=1 leaf=\(leaf)"), "\(f.extensionLog)")
        let received = try Data(contentsOf: URL(fileURLWithPath: f.container + "/extension-received/protected"))
        #expect(Array(received) == protected.bytes)

        // Another certificate: the extension cancels, and the download fails.
        let (g, other) = try await run(["trustSHA256": String(repeating: "0", count: 64)], tls: issued)
        defer { withExtendedLifetime(other) {} }
        #expect(
            eventually {
                g.extensionLog.contains { $0.hasPrefix("failed protected: ") && $0.contains("server-trust") }
            },
            "\(g.extensionLog)")
    }
}
