import BacklotBasics
import BacklotExtension
import BacklotJSON
import Foundation
import Testing

/// Numbers in an extension's answer and in the agent's calls: checked, named when wrong, never a trap.
@Suite struct ExtensionNumberTests {
    /// What no size, version or priority may be, as written in JSON.
    static let bad = ["9223372036854775808", "18446744073709551616", "1000000000000000000000000000000", "1e400", "-1e400", "1.5", "1e3",
                      #""12""#, "true", "{}"]

    func reply(_ json: String) throws -> ExtensionReply {
        try ExtensionReply(json: try JSONReader(source: "reply.json").read(json).root, source: "the extension's answer")
    }

    @Test func anAnswersFileSizeThatDoesNotFitIsNamed() throws {
        for value in Self.bad + ["-1"] {
            let json = #"{"downloads": [{"identifier": "d1", "url": "https://example.com/a", "fileSize": \#(value)}]}"#
            do {
                _ = try reply(json)
                Issue.record("fileSize \(value) was accepted")
            } catch let e as BacklotError {
                #expect(e.code == .invalidInput && e.exitStatus == 2, "\(value): \(e)")
                #expect(e.message.contains("fileSize"), "\(value): \(e)")
            }
        }
        // The largest size SQLite holds is fine; null is "unknown".
        let largest = try reply(#"{"downloads": [{"identifier": "d1", "url": "https://example.com/a", "fileSize": 9223372036854775807}]}"#)
        #expect(largest.downloads.first?.fileSize == UInt64(Int64.max))
        let unknown = try reply(#"{"downloads": [{"identifier": "d1", "url": "https://example.com/a", "fileSize": null}]}"#)
        #expect(unknown.downloads.first?.fileSize == nil)
    }

    @Test func anAnswersPriorityThatDoesNotFitIsNamed() throws {
        for value in Self.bad {
            let json = #"{"downloads": [{"identifier": "d1", "url": "https://example.com/a", "priority": \#(value)}]}"#
            #expect(throws: BacklotError.self, "priority \(value)") { try reply(json) }
        }
        #expect(try reply(#"{"downloads": [{"identifier": "d1", "url": "https://example.com/a", "priority": -5}]}"#).downloads.first?.priority == -5)
    }

    @Test func aCallsPackSizeVersionAndCodeAreChecked() throws {
        func call(_ json: String) throws -> ExtensionCall {
            try ExtensionCall(json: try JSONReader(source: "call.json").read(json).root, source: "call.json")
        }
        let policy = #"{"essential": {"installationEventTypes": ["firstInstallation"]}}"#
        for value in Self.bad + ["-1"] {
            for key in ["downloadSize", "version"] {
                var fields = ["\"downloadSize\": 10", "\"version\": 1"]
                fields[key == "downloadSize" ? 0 : 1] = "\"\(key)\": \(value)"
                let json = #"{"call": "shouldDownload", "packs": [{"id": "P", "digest": "d", "downloadPolicy": \#(policy), \#(fields.joined(separator: ", "))}]}"#
                do {
                    _ = try call(json)
                    Issue.record("\(key) \(value) was accepted")
                } catch let e as BacklotError {
                    #expect(e.code == .invalidInput && e.message.contains(key), "\(key) \(value): \(e)")
                }
            }
            let failed = #"{"call": "failed", "download": {"identifier": "d", "url": "https://example.com/a"}, "code": \#(value)}"#
            if value != "-1" { #expect(throws: BacklotError.self, "code \(value)") { try call(failed) } }
            let info = #"{"call": "downloads", "request": "install", "manifestPath": "m.json", "extensionInfo": {"restrictedDownloadSizeRemaining": \#(value)}}"#
            // 2^63 fits the UInt64 a remaining allowance is; nothing else here does.
            if value != "9223372036854775808" { #expect(throws: BacklotError.self, "remaining \(value)") { try call(info) } }
        }
    }
}
