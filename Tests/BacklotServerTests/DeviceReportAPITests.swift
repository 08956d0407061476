import BacklotBasics
import BacklotHTTPServer
import BacklotJSON
import BacklotProtocol
import BacklotTestSupport
import Foundation
import Testing

@testable import BacklotServer

/// Devices report without a token and without leaving their address; adoption is read with one;
/// a phased rollout is set through the API under the app's second-reviewer rule.
@Suite(.serialized) struct DeviceReportAPITests {
    typealias Fixture = ManagementAPITests.Fixture
    let app = "com.example.game"

    func json(_ r: Curl.Result) throws -> JSONNode { try JSONReader(source: "response").read(r.body).root }

    /// Versions 1 and 2 of Levels, 1 live on production, 2 a 5 % candidate approved by `approver`.
    func stage(_ f: Fixture, approver: String) throws {
        #expect(try f.call("POST", "/api/apps", token: f.admin, json: "{\"id\":\"\(app)\"}").status == 201)
        #expect(try f.call("POST", "/api/apps/\(app)/packs", token: f.admin, json: #"{"id":"Levels"}"#).status == 201)
        for seed in [UInt64(1), 2] {
            let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: try f.packArchive(seed: seed))))
            _ = try f.repository.uploads.uploadAndProcess(app: app, pack: "Levels", bytes: bytes)
        }
        for (body, id) in [
            (#"{"pack":"Levels","version":1,"channel":"production"}"#, 1),
            (#"{"pack":"Levels","version":2,"channel":"production","rollout":5}"#, 2),
        ] {
            #expect(try f.call("POST", "/api/apps/\(app)/releases", token: f.admin, json: body).status == 202)
            #expect(try f.call("POST", "/api/apps/\(app)/releases/\(id)/approve", token: approver).status == 200)
        }
    }

    @Test func devicesReportWithoutATokenAndAdoptionNeedsOne() throws {
        let f = try Fixture()
        let bob = try f.repository.tokens.issue(role: .reviewer, person: "bob").token
        try stage(f, approver: bob)
        let reports = "/api/apps/\(app)/reports"
        for _ in 0..<11 {
            let r = try f.call(
                "POST", reports,
                json:
                    #"{"channel":"production","held":[{"pack":"Levels","version":1}],"installs":[{"pack":"Levels","version":1,"started":1,"finished":1,"failed":0}]}"#
            )
            #expect(try r.status == 200 && json(r)["counted"]?.kind == .number("2"), "\(r.text)")
        }
        // What a report may not say: a member of no schema (a device ID), a count out of bounds.
        let tagged = try f.call(
            "POST", reports, json: #"{"channel":"production","deviceId":"abc","held":[]}"#)
        #expect(tagged.status == 400 && tagged.text.contains("deviceId"), "\(tagged.text)")
        let huge = try f.call(
            "POST", reports,
            json:
                #"{"channel":"production","installs":[{"pack":"Levels","version":1,"started":5000,"finished":0,"failed":0}]}"#
        )
        #expect(huge.status == 400 && huge.text.contains("started"), "\(huge.text)")
        #expect(
            try f.call("POST", "/api/apps/com.example.nope/reports", json: #"{"channel":"production"}"#).status == 404)
        // A member given twice, at the top or in an element, is refused (which one would count?).
        for twice in [
            #"{"channel":"production","channel":"internal"}"#,
            #"{"channel":"production","held":[{"pack":"Levels","pack":"Other","version":1}]}"#,
        ] {
            let r = try f.call("POST", reports, json: twice)
            #expect(r.status == 400 && r.text.contains("appears twice"), "\(twice): \(r.text)")
        }

        #expect(try f.call("GET", "/api/apps/\(app)/adoption").status == 401)
        let reader = try f.repository.tokens.create(role: .reader)
        let adoption = try json(try f.call("GET", "/api/apps/\(app)/adoption?days=1", token: reader))
        let rows = adoption["rows"]?.arrayElements ?? []
        #expect(adoption["threshold"]?.kind == .number("10"))
        #expect(rows.first { $0["pack"]?.kind == .null }?["devices"]?.kind == .number("11"), "\(adoption.serialized())")
        let v1 = rows.first { $0["version"]?.kind == .number("1") }
        #expect(v1?["devices"]?.kind == .number("11") && v1?["failed"]?.kind == .null, "0 failures is below 10")

        // The access log keeps no address for a report, and keeps it for everything else.
        let report = HostingServer.logLine(
            HTTPRequest(method: "POST", path: reports, remoteAddress: "192.0.2.7"), route: "api", status: 200, bytes: 2,
            seconds: 0.001)
        #expect(report.contains(#""remote":"""#) && !report.contains("192.0.2.7"), "\(report)")
        let other = HostingServer.logLine(
            HTTPRequest(method: "GET", path: "/api/apps/\(app)/adoption", remoteAddress: "192.0.2.7"), route: "api",
            status: 200, bytes: 2, seconds: 0.001)
        #expect(other.contains("192.0.2.7"))
    }

    @Test func aPhasedRolloutIsTheCallersStepsUnderTheSecondReviewerRule() throws {
        let f = try Fixture()
        let bob = try f.repository.tokens.issue(role: .reviewer, person: "bob").token
        let carol = try f.repository.tokens.issue(role: .reviewer, person: "carol").token
        try stage(f, approver: bob)
        #expect(
            try f.call("PATCH", "/api/apps/\(app)", token: f.admin, json: #"{"secondReviewerAbove":25}"#).status == 200)
        let phases = "/api/apps/\(app)/packs/Levels/phases"
        #expect(try f.call("GET", phases, token: bob).status == 404)
        // Bob approved version 2: his steps may not go past 25 %; Carol's may.
        let bobs = try f.call("POST", phases, token: bob, json: #"{"steps":[5,50,100],"stepSeconds":86400}"#)
        #expect(try bobs.status == 403 && json(bobs)["error"]?["code"]?.stringValue == "fourEyes", "\(bobs.text)")
        #expect(try f.call("POST", phases, token: bob, json: #"{"steps":[5,25],"stepSeconds":86400}"#).status == 200)
        // Steps are taken in rising order, each once.
        let set = try f.call("POST", phases, token: carol, json: #"{"steps":[50,10,100,50],"stepSeconds":3600}"#)
        #expect(set.status == 200, "\(set.text)")
        let body = try json(set)
        #expect(body["state"]?.stringValue == "running" && body["setBy"]?.stringValue == "carol")
        #expect(body["steps"]?.arrayElements?.map(\.kind) == [.number("10"), .number("50"), .number("100")])
        let channel = try json(try f.call("GET", "/api/apps/\(app)/channels/production", token: bob))
        #expect(channel["packs"]?.arrayElements?.first?["candidate"]?["rolloutPercent"]?.kind == .number("10"))
        #expect(try json(try f.call("GET", phases, token: bob))["version"]?.kind == .number("2"))

        // Bad steps and durations are refused, naming the field.
        for bad in [
            #"{"steps":[1,2,3,4,5,6,7,8,9,10,11],"stepSeconds":3600}"#, #"{"steps":[],"stepSeconds":3600}"#,
            #"{"steps":[10],"stepSeconds":5}"#, #"{"steps":[0],"stepSeconds":3600}"#,
        ] {
            let r = try f.call("POST", phases, token: carol, json: bad)
            #expect(r.status == 400, "\(bad): \(r.text)")
        }
        // A reader may look, not set.
        let reader = try f.repository.tokens.create(role: .reader)
        #expect(try f.call("POST", phases, token: reader, json: #"{"steps":[10],"stepSeconds":3600}"#).status == 403)
        let audit = try json(try f.call("GET", "/api/audit?action=rollout.phase", token: f.admin))
        #expect(audit["entries"]?.arrayElements?.first?["actor"]?["person"]?.stringValue == "carol")
    }
}
