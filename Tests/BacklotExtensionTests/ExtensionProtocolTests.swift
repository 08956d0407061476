import BacklotBasics
import BacklotClient
import BacklotExtension
import BacklotFormat
import BacklotJSON
import Foundation
import Testing

/// The call protocol between the agent and a downloader extension (docs/protocol.md): every
/// call and answer survives its JSON text, numbers from the other side are checked, and the
/// answer's defaults decide as documented.
@Suite struct ExtensionProtocolTests {
    static let download = URLDownload(
        identifier: "level-2", url: URL(string: "https://cdn.example/level-2.bin")!, fileSize: 1 << 40,
        isEssential: true, priority: -3)
    static let pack = AssetPack(
        id: "Levels", downloadSize: 123_456, version: 7, userInfo: nil, language: "fr",
        downloadPolicy: .prefetch(installationEventTypes: [.firstInstallation, .subsequentUpdate]),
        digest: String(repeating: "a", count: 64))

    func throughText(_ node: JSONNode) throws -> JSONNode {
        try JSONReader(source: "call.json").read(node.prettyPrinted()).root
    }

    @Test func everyCallSurvivesItsText() throws {
        let calls: [ExtensionCall] = [
            .shouldDownload([Self.pack]),
            .downloads(
                .update, manifestPath: "/c/.extension-calls/manifest.json",
                AppExtensionInfo(restrictedDownloadSizeRemaining: 5, restrictedEssentialDownloadSizeRemaining: nil)),
            .finished(Self.download, filePath: "/c/downloads/level-2", outcome: 12),
            .failed(Self.download, message: "the server answered 404", code: 404, outcome: nil),
        ]
        for call in calls {
            #expect(try ExtensionCall(json: try throughText(call.json), source: "call.json") == call, "\(call.name)")
        }
    }

    @Test func answersSurviveTheirTextAndDecideAsDocumented() throws {
        let reply = ExtensionReply(accepted: ["A"], declined: nil, downloads: [Self.download])
        #expect(try ExtensionReply(json: try throughText(reply.json), source: "reply.json") == reply)
        let essential = AssetPack(
            id: "E", downloadSize: 1, version: 1, userInfo: nil, language: nil,
            downloadPolicy: .essential(installationEventTypes: []), digest: "")
        let other = AssetPack(
            id: "B", downloadSize: 1, version: 1, userInfo: nil, language: nil, downloadPolicy: .onDemand, digest: "")
        // `download` without `decline`: what it does not name is declined, but never an essential pack.
        #expect(reply.declines(other) && !reply.declines(essential))
        // `decline` names what is turned down, essential or not.
        #expect(ExtensionReply(declined: ["E"]).declines(essential) && !ExtensionReply(declined: ["E"]).declines(other))
        // `{}` decides nothing.
        let empty = try ExtensionReply(json: try JSONReader(source: "reply.json").read("{}").root, source: "reply.json")
        #expect(!empty.declines(other) && !empty.declines(essential))
    }

    @Test func hostileNumbersAreRefusedNamingTheKey() throws {
        let base =
            #"{"call":"finished","filePath":"/f","download":{"identifier":"d","url":"https://x/y","fileSize":SIZE},"outcome":OUTCOME}"#
        for (size, outcome, key) in [
            ("-1", "1", "fileSize"), ("1e3", "1", "fileSize"), ("18446744073709551616", "1", "fileSize"),
            ("\"12\"", "1", "fileSize"), ("1", "0", "outcome"), ("1", "1.5", "outcome"), ("1", "1e400", "outcome"),
        ] {
            let text = base.replacingOccurrences(of: "SIZE", with: size).replacingOccurrences(
                of: "OUTCOME", with: outcome)
            do {
                _ = try ExtensionCall(json: try JSONReader(source: "call.json").read(text).root, source: "call.json")
                Issue.record("accepted \(text)")
            } catch let e as BacklotError {
                #expect(e.code == .invalidInput && e.message.contains(key), "\(e)")
            }
        }
        for text in [
            #"{"call":"unknown"}"#, #"{"call":"shouldDownload"}"#,
            #"{"call":"downloads","request":"sometimes","manifestPath":"/m"}"#,
            #"{"call":"finished","filePath":"/f","download":{"identifier":"","url":"https://x"}}"#,
        ] {
            #expect(throws: BacklotError.self, "\(text)") {
                try ExtensionCall(json: try JSONReader(source: "call.json").read(text).root, source: "call.json")
            }
        }
        #expect(throws: BacklotError.self) {
            try ExtensionReply(json: try JSONReader(source: "r").read(#"{"download":"A"}"#).root, source: "r")
        }
        #expect(throws: BacklotError.self) {
            try ExtensionReply(json: try JSONReader(source: "r").read(#"{"decline":[1]}"#).root, source: "r")
        }
    }
}
