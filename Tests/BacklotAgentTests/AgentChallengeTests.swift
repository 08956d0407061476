import BacklotAgent
import BacklotBasics
import BacklotTestSupport
import Foundation
import Testing

/// A URL download the agent runs that meets a 401 (a real nginx requiring Basic authentication):
/// the app is not there, so the extension is woken for its `backgroundDownload(_:didReceive:)`,
/// and its answer is applied to the transfer.
@Suite(.serialized) struct AgentChallengeTests {
    func run(_ settings: [String: Any]) async throws -> (AgentFixture, BasicAuthServer) {
        let protected = try BasicAuthServer(seed: 4011)
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
}
