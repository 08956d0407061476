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

    func call(_ text: String) throws -> ExtensionCall {
        try ExtensionCall(decoding: Array(text.utf8), source: "call.json")
    }
    func reply(_ text: String) throws -> ExtensionReply { try ExtensionReply(decoding: Array(text.utf8), source: "r") }

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
            #expect(try ExtensionCall(decoding: try call.encoded(), source: "call.json") == call, "\(call.name)")
        }
    }

    @Test func answersSurviveTheirTextAndDecideAsDocumented() throws {
        let reply = ExtensionReply(accepted: ["A"], declined: nil, downloads: [Self.download])
        #expect(try ExtensionReply(decoding: try reply.encoded(), source: "reply.json") == reply)
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
        let empty = try self.reply("{}")
        #expect(!empty.declines(other) && !empty.declines(essential))
    }

    @Test func hostileNumbersAreRefusedNamingTheKey() throws {
        let base =
            #"{"call":"finished","filePath":"/f","download":{"identifier":"d","url":"https://x/y","fileSize":SIZE},"outcome":OUTCOME}"#
        for (size, outcome, key) in [
            ("-1", "1", "download.fileSize"), ("9223372036854775808", "1", "download.fileSize"),
            ("18446744073709551616", "1", "download.fileSize"), ("1e400", "1", "download.fileSize"),
            ("\"12\"", "1", "download.fileSize"), ("1", "0", "outcome"), ("1", "1.5", "outcome"),
            ("1", "1e400", "outcome"), ("1", "true", "outcome"), ("1", "{}", "outcome"),
        ] {
            let text = base.replacingOccurrences(of: "SIZE", with: size).replacingOccurrences(
                of: "OUTCOME", with: outcome)
            do {
                _ = try call(text)
                Issue.record("accepted \(text)")
            } catch let e as BacklotError {
                #expect(e.code == .invalidInput && e.message.contains("the key \(key)"), "\(e)")
                #expect(e.context == "call.json", "\(e)")
            }
        }
        // JSON does not tell 1000 from 1e3 or 1000.0: the number is what counts.
        let exact = try call(
            base.replacingOccurrences(of: "SIZE", with: "1e3").replacingOccurrences(of: "OUTCOME", with: "2.0"))
        #expect(
            exact
                == .finished(
                    URLDownload(identifier: "d", url: URL(string: "https://x/y")!, fileSize: 1000), filePath: "/f",
                    outcome: 2))
        for text in [
            #"{"call":"unknown"}"#, #"{"call":"shouldDownload"}"#,
            #"{"call":"downloads","request":"sometimes","manifestPath":"/m"}"#,
            #"{"call":"finished","filePath":"/f","download":{"identifier":"","url":"https://x"}}"#,
            #"{"call":"shouldDownload","packs":{}}"#, #"[]"#, #"{"call":"#,
        ] {
            let e = try #require(throws: BacklotError.self, "\(text)") { try call(text) }
            #expect(e.code == .invalidInput && e.context == "call.json", "\(e)")
        }
        for text in [
            #"{"download":"A"}"#, #"{"decline":[1]}"#, #"{"downloads":[{"identifier":"d"}]}"#, #"{"downloads":7}"#,
        ] {
            let e = try #require(throws: BacklotError.self, "\(text)") { try reply(text) }
            #expect(e.code == .invalidInput && e.context == "r", "\(e)")
        }
    }
}
