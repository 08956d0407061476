import BacklotAgent
import BacklotBasics
import BacklotExtension
import BacklotJSON
import BacklotTaskScheduler
import Foundation
import Testing

/// Numbers in an extension's answer and in the agent's calls: checked, named when wrong, never a trap.
@Suite struct ExtensionNumberTests {
    /// What no size, version or priority may be, as written in JSON.
    static let bad = [
        "9223372036854775808", "18446744073709551616", "1000000000000000000000000000000", "1e400", "-1e400", "1.5",
        "1e30", "0.1e1000", #""12""#, "true", "{}", "[]",
    ]

    func reply(_ json: String) throws -> ExtensionReply {
        try ExtensionReply(decoding: Array(json.utf8), source: "the extension's answer")
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
        let largest = try reply(
            #"{"downloads": [{"identifier": "d1", "url": "https://example.com/a", "fileSize": 9223372036854775807}]}"#)
        #expect(largest.downloads.first?.fileSize == UInt64(Int64.max))
        let unknown = try reply(
            #"{"downloads": [{"identifier": "d1", "url": "https://example.com/a", "fileSize": null}]}"#)
        #expect(unknown.downloads.first?.fileSize == nil)
    }

    @Test func anAnswersPriorityThatDoesNotFitIsNamed() throws {
        for value in Self.bad {
            let json = #"{"downloads": [{"identifier": "d1", "url": "https://example.com/a", "priority": \#(value)}]}"#
            #expect(throws: BacklotError.self, "priority \(value)") { try reply(json) }
        }
        #expect(
            try reply(#"{"downloads": [{"identifier": "d1", "url": "https://example.com/a", "priority": -5}]}"#)
                .downloads.first?.priority == -5)
    }

    @Test func aCallsPackSizeVersionAndCodeAreChecked() throws {
        func call(_ json: String) throws -> ExtensionCall {
            try ExtensionCall(decoding: Array(json.utf8), source: "call.json")
        }
        let policy = #"{"essential": {"installationEventTypes": ["firstInstallation"]}}"#
        for value in Self.bad + ["-1"] {
            for key in ["downloadSize", "version"] {
                var fields = ["\"downloadSize\": 10", "\"version\": 1"]
                fields[key == "downloadSize" ? 0 : 1] = "\"\(key)\": \(value)"
                let json =
                    #"{"call": "shouldDownload", "packs": [{"id": "P", "digest": "d", "downloadPolicy": \#(policy), \#(fields.joined(separator: ", "))}]}"#
                do {
                    _ = try call(json)
                    Issue.record("\(key) \(value) was accepted")
                } catch let e as BacklotError {
                    #expect(e.code == .invalidInput && e.message.contains(key), "\(key) \(value): \(e)")
                }
            }
            let failed =
                #"{"call": "failed", "download": {"identifier": "d", "url": "https://example.com/a"}, "code": \#(value)}"#
            if value != "-1" { #expect(throws: BacklotError.self, "code \(value)") { try call(failed) } }
            let info =
                #"{"call": "downloads", "request": "install", "manifestPath": "m.json", "extensionInfo": {"restrictedDownloadSizeRemaining": \#(value)}}"#
            // 2^63 fits the UInt64 a remaining allowance is; nothing else here does.
            if value != "9223372036854775808" {
                #expect(throws: BacklotError.self, "remaining \(value)") { try call(info) }
            }
        }
    }
}

/// Times the agent reads back from its store or from the task history: never converted to an
/// integer unchecked, never able to hold the periodic check back forever.
@Suite(.serialized) struct StoredAgentTimeTests {
    @Test func launchDatesThatNoIntegerHoldsDoNotTrapThePolicy() {
        let policy = PeriodicCheckPolicy(baseInterval: 3600)
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let odd = [Double.infinity, -.infinity, .nan, 1e300, -1e300, 9.3e18 * 86_400].map {
            Date(timeIntervalSince1970: $0)
        }
        #expect(policy.interval(launches: odd, now: now) == 28_800)
        #expect(
            policy.interval(launches: odd + (0..<7).map { now.addingTimeInterval(-Double($0) * 86_400) }, now: now)
                == 3600)
    }

    @Test(arguments: ["nan", "inf", "-inf", "1e300", "not a time"])
    func aStoredPeriodicClockThatMakesNoSenseStartsAgain(_ stored: String) async throws {
        let f = try AgentFixture()
        let clock = ManualClock()
        let config = try AgentConfiguration(
            path: try f.writeConfig(["BacklotPeriodicCheckInterval": 100], withExtension: false),
            containerPath: f.container)
        let agent = try Agent(containerPath: f.container, configuration: config, conditions: f.conditions, clock: clock)
        func periodicEvents() throws -> Int { try agent.store.recent(100).filter { $0.request == .periodic }.count }
        try agent.store.setValue("lastPeriodic", stored)
        await agent.round()  // counts as the first round: the clock starts now
        #expect(try agent.store.value("lastPeriodic").flatMap(Double.init)?.isFinite == true)
        clock.advance(by: 960)  // never launched: every 8 × 100 s, spread by at most +20 %
        await agent.round()
        #expect(try periodicEvents() == 1, "\(stored)")
    }
}
