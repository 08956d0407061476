import BacklotAgent
import BacklotClient
import BacklotContainer
import BacklotExtension
import Foundation
import Testing

/// Apple's iOS 27 `languageChange` content request, against a real server: when the preferred
/// languages of the agent's configuration change, the agent calls the extension with that request
/// (which reads the manifest copy as Apple's `AssetPackManifest`) and reconciles the localized packs.
@Suite(.serialized) struct AgentLanguageChangeTests {
    /// Rewrites `BacklotPreferredLanguages` in the configuration file at `path`, as a person editing it would.
    static func setLanguages(_ languages: [String], in path: String) throws {
        var config =
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as! [String: Any]
        config["BacklotPreferredLanguages"] = languages
        try JSONSerialization.data(withJSONObject: config).write(to: URL(fileURLWithPath: path), options: .atomic)
    }

    @Test func aChangeOfPreferredLanguagesReachesTheExtensionAndReconcilesTheLocalizedPacks() async throws {
        let f = try AgentFixture()
        try f.server.publish(id: "Voice-fr", seed: 1, language: "fr")
        try f.server.publish(id: "Voice-de", seed: 2, language: "de")
        try f.server.publish(id: "Levels", seed: 3)
        let config = try f.writeConfig(["BacklotPreferredLanguages": ["en"]])
        let agent = try f.agent(config: config)
        func changes() throws -> [AgentStore.Event] {
            try agent.store.recent(100).filter { $0.request == .languageChange }
        }

        await agent.round()  // the first round records the languages: no request
        #expect(try changes().isEmpty)
        #expect(try f.installed().isEmpty)

        try Self.setLanguages(["fr-CA", "en"], in: config)
        await agent.round()
        #expect(try changes().count == 1 && changes().allSatisfy { $0.state == "done" })
        #expect(try f.installed() == ["Voice-fr"])
        #expect(f.lines.all.contains { $0.contains("languages: the preferred languages changed (en → fr-CA,en)") })
        #expect(f.extensionLog.contains { $0.hasPrefix("downloads languageChange manifest=read") })
        #expect(
            f.extensionLog.contains(
                "manifest languageChange packs=Levels,Voice-de,Voice-fr resolved=fr localized=Voice-fr archives=Voice-fr absolute=true"
            ), "the extension read the copy as Apple's manifest, in the agent's languages: \(f.extensionLog)")

        await agent.round()  // nothing changed: no second request
        #expect(try changes().count == 1)

        try Self.setLanguages(["de"], in: config)
        await agent.round()
        #expect(try changes().count == 2)
        #expect(try f.installed() == ["Voice-de"], "the French voice reconciling brought is removed")
        #expect(f.extensionLog.contains { $0.contains("manifest languageChange") && $0.contains("localized=Voice-de") })
    }

    @Test func aWrongLanguageListIsRefusedByNameAndAChangedFileThatTurnsWrongKeepsTheLanguages() async throws {
        let f = try AgentFixture()
        let bad = try f.writeConfig(["BacklotPreferredLanguages": ["fr", "<script>"]], name: "bad.json")
        #expect {
            try AgentConfiguration(path: bad, containerPath: f.container)
        } throws: { error in
            "\(error)".contains("BacklotPreferredLanguages") && "\(error)".contains("element 1 (\"<script>\")")
                && "\(error)".contains("language tags")
        }
        let config = try f.writeConfig(["BacklotPreferredLanguages": ["fr"]])
        let agent = try f.agent(config: config)
        await agent.round()
        try Self.setLanguages(["not a tag"], in: config)
        await agent.round()
        await agent.round()
        #expect(try agent.store.recent(100).filter { $0.request == .languageChange }.isEmpty)
        let warnings = f.lines.all.filter { $0.contains("keeping the preferred languages the agent had") }
        #expect(warnings.count == 1, "said once: \(warnings)")
    }
}
