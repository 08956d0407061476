import BacklotBasics
import BacklotJSON
import BacklotProtocol
import BacklotTestSupport
import Foundation
import Testing

@testable import BacklotServer

/// An app's four-eyes rule compares people, not tokens: a person's second token (made without
/// naming anyone, it is its creator's) cannot approve that person's request; a token that belongs
/// to someone else can. The person is shown in the token list, `whoami`, release requests and
/// the audit trail.
@Suite(.serialized) struct FourEyesPerPersonTests {
    typealias Fixture = ManagementAPITests.Fixture

    func json(_ r: Curl.Result) throws -> JSONNode { try JSONReader(source: "response").read(r.body).root }

    /// A token made by `by` (its secret), with `body` as the request.
    func token(_ f: Fixture, by: String, _ body: String) throws -> String {
        let r = try f.call("POST", "/api/tokens", token: by, json: body)
        #expect(r.status == 201, "\(r.text)")
        return try #require(try json(r)["token"]?.stringValue)
    }

    /// The pack Levels of `app`, with versions 1 and 2 uploaded and processed.
    func twoVersionsOfLevels(_ f: Fixture, _ app: String) throws {
        #expect(try f.call("POST", "/api/apps/\(app)/packs", token: f.admin, json: #"{"id":"Levels"}"#).status == 201)
        for (seed, number) in [(UInt64(1), 1), (2, 2)] {
            let archive = try f.packArchive(seed: seed)
            let size = try FileDescriptor.openForReading(archive).size()
            #expect(
                try f.call("POST", "/api/apps/\(app)/packs/Levels/versions", token: f.admin, json: "{\"size\":\(size)}")
                    .status == 201)
            #expect(
                try f.call(
                    "PUT", "/api/apps/\(app)/packs/Levels/versions/\(number)/archive", token: f.admin, file: archive
                ).status == 202)
            #expect(try f.waitUntilProcessed(app, "Levels", number)["state"]?.stringValue == "COMPLETE")
        }
    }

    @Test func anAdminsSecondTokenIsTheSameAdminAndCannotApproveTheirOwnRequest() throws {
        let f = try Fixture()
        let app = "com.example.game"
        #expect(
            try f.call("POST", "/api/apps", token: f.admin, json: "{\"id\":\"\(app)\",\"fourEyes\":true}").status == 201
        )
        #expect(try f.call("POST", "/api/apps/\(app)/packs", token: f.admin, json: #"{"id":"Levels"}"#).status == 201)
        let archive = try f.packArchive()
        let size = try FileDescriptor.openForReading(archive).size()
        #expect(
            try f.call("POST", "/api/apps/\(app)/packs/Levels/versions", token: f.admin, json: "{\"size\":\(size)}")
                .status == 201)
        #expect(
            try f.call("PUT", "/api/apps/\(app)/packs/Levels/versions/1/archive", token: f.admin, file: archive).status
                == 202)
        #expect(try f.waitUntilProcessed(app, "Levels", 1)["state"]?.stringValue == "COMPLETE")

        // The admin (person "admin") makes a second token for themselves, naming nobody.
        let second = try token(f, by: f.admin, #"{"role":"admin","label":"my laptop"}"#)
        let me = try json(try f.call("GET", "/api/whoami", token: second))
        #expect(me["person"]?.stringValue == "admin", "\(me.serialized())")
        // And one for Bob, who reviews.
        let bob = try token(f, by: f.admin, #"{"role":"reviewer","label":"bob","person":"bob"}"#)

        let asked = try f.call(
            "POST", "/api/apps/\(app)/releases", token: f.admin,
            json: #"{"pack":"Levels","version":1,"channel":"external"}"#)
        #expect(asked.status == 202, "\(asked.text)")
        #expect(try json(asked)["request"]?["requestedBy"]?["person"]?.stringValue == "admin")
        for own in [f.admin, second] {
            let r = try f.call("POST", "/api/apps/\(app)/releases/1/approve", token: own)
            #expect(try r.status == 403 && json(r)["error"]?["code"]?.stringValue == "fourEyes", "\(r.text)")
            #expect(r.text.contains("another person"), "\(r.text)")
        }
        let approved = try f.call("POST", "/api/apps/\(app)/releases/1/approve", token: bob)
        #expect(approved.status == 200, "\(approved.text)")
        #expect(try json(approved)["decidedBy"]?["person"]?.stringValue == "bob")

        // The token list and the audit trail name the person.
        let tokens = try json(try f.call("GET", "/api/tokens", token: f.admin))["tokens"]?.arrayElements ?? []
        #expect(Set(tokens.compactMap { $0["person"]?.stringValue }) == ["admin", "bob"])
        let audit = try json(try f.call("GET", "/api/audit?action=release.approve", token: f.admin))
        #expect(audit["entries"]?.arrayElements?.first?["actor"]?["person"]?.stringValue == "bob")

        // An empty person is refused, naming the field.
        let empty = try f.call("POST", "/api/tokens", token: f.admin, json: #"{"role":"reader","person":""}"#)
        #expect(empty.status == 400 && empty.text.contains("person"), "\(empty.text)")
    }

    @Test func aRolloutStepAboveTheAppsShareNeedsAnotherPersonThanTheApprover() throws {
        let f = try Fixture()
        let app = "com.example.game"
        #expect(try f.call("POST", "/api/apps", token: f.admin, json: "{\"id\":\"\(app)\"}").status == 201)
        let rule = try f.call("PATCH", "/api/apps/\(app)", token: f.admin, json: #"{"secondReviewerAbove":25}"#)
        #expect(try rule.status == 200 && json(rule)["secondReviewerAbove"]?.kind == .number("25"), "\(rule.text)")
        #expect(try json(rule)["fourEyes"]?.kind == .bool(false), "PATCH leaves what it does not name")
        try twoVersionsOfLevels(f, app)
        let bob = try token(f, by: f.admin, #"{"role":"reviewer","person":"bob"}"#)
        let carol = try token(f, by: f.admin, #"{"role":"reviewer","person":"carol"}"#)
        // Version 1 live everywhere, version 2 rolled out to 5 %, approved by Bob.
        #expect(
            try f.call(
                "POST", "/api/apps/\(app)/releases", token: f.admin,
                json: #"{"pack":"Levels","version":1,"channel":"production"}"#
            ).status == 202)
        #expect(try f.call("POST", "/api/apps/\(app)/releases/1/approve", token: bob).status == 200)
        #expect(
            try f.call(
                "POST", "/api/apps/\(app)/releases", token: f.admin,
                json: #"{"pack":"Levels","version":2,"channel":"production","rollout":5}"#
            ).status == 202)
        #expect(try f.call("POST", "/api/apps/\(app)/releases/2/approve", token: bob).status == 200)

        let rollout = "/api/apps/\(app)/packs/Levels/rollout"
        // Up to the share, Bob alone; above it (and promoting), not Bob; Carol may.
        #expect(try f.call("POST", rollout, token: bob, json: #"{"percent":25}"#).status == 200)
        for percent in ["25.01", "50", "100"] {
            let r = try f.call("POST", rollout, token: bob, json: "{\"percent\":\(percent)}")
            #expect(
                try r.status == 403 && json(r)["error"]?["code"]?.stringValue == "fourEyes"
                    && r.text.contains("bob approved"), "\(percent): \(r.text)")
        }
        let channel = try json(try f.call("GET", "/api/apps/\(app)/channels/production", token: bob))
        #expect(channel["packs"]?.arrayElements?.first?["candidate"]?["rolloutPercent"]?.kind == .number("25"))
        #expect(try f.call("POST", rollout, token: carol, json: #"{"percent":50}"#).status == 200)
        // Lowering is never held back: Bob brings it down to 30 % (an incident).
        #expect(try f.call("POST", rollout, token: bob, json: #"{"percent":30}"#).status == 200)
        // Nor does Bob go round the rule by approving a request for every device (a version is live).
        let all = try f.call(
            "POST", "/api/apps/\(app)/releases", token: f.admin,
            json: #"{"pack":"Levels","version":2,"channel":"production"}"#)
        #expect(all.status == 202, "\(all.text)")
        let id = try #require(try json(all)["request"]?["id"]?.kind)
        guard case .number(let number) = id else { throw BacklotError(.io, "no request id") }
        let approval = try f.call("POST", "/api/apps/\(app)/releases/\(number)/approve", token: bob)
        #expect(
            try approval.status == 403 && json(approval)["error"]?["code"]?.stringValue == "fourEyes"
                && approval.text.contains("second-reviewer"), "\(approval.text)")
        // Nor by rolling production back to version 2, which it never served to every device.
        let back = try f.call(
            "POST", "/api/apps/\(app)/packs/Levels/rollback", token: bob,
            json: #"{"channel":"production","version":2}"#)
        #expect(
            try back.status == 403 && json(back)["error"]?["code"]?.stringValue == "fourEyes"
                && back.text.contains("bob approved"), "\(back.text)")
        let still = try json(try f.call("GET", "/api/apps/\(app)/channels/production", token: bob))
        #expect(still["packs"]?.arrayElements?.first?["candidate"]?["rolloutPercent"]?.kind == .number("30"))
        // Off again (0): Bob may promote.
        #expect(
            try f.call("PATCH", "/api/apps/\(app)", token: f.admin, json: #"{"secondReviewerAbove":0}"#).text.contains(
                #""secondReviewerAbove":null"#))
        #expect(try f.call("POST", rollout, token: bob, json: #"{"percent":100}"#).status == 200)
    }

    /// Withdrawing production, then approving the pack's return to every device, is not one
    /// person's way round the second-reviewer rule: Bob, who could not approve an update for every
    /// device, withdraws the pack and tries again, refused, naming him; Carol may approve it (two
    /// people agreed), so a withdrawn pack is never stuck.
    @Test func withdrawingProductionDoesNotOpenAWayRoundTheShare() throws {
        let f = try Fixture()
        let app = "com.example.game"
        #expect(try f.call("POST", "/api/apps", token: f.admin, json: "{\"id\":\"\(app)\"}").status == 201)
        #expect(
            try f.call("PATCH", "/api/apps/\(app)", token: f.admin, json: #"{"secondReviewerAbove":25}"#).status == 200)
        try twoVersionsOfLevels(f, app)
        let bob = try token(f, by: f.admin, #"{"role":"reviewer","person":"bob"}"#)
        let carol = try token(f, by: f.admin, #"{"role":"reviewer","person":"carol"}"#)
        func request(_ body: String) throws -> Int {
            let r = try f.call("POST", "/api/apps/\(app)/releases", token: f.admin, json: body)
            #expect(r.status == 202, "\(r.text)")
            guard case .number(let n) = try #require(try json(r)["request"]?["id"]?.kind), let id = Int(n) else {
                throw BacklotError(.io, "no request id")
            }
            return id
        }
        let first = try request(#"{"pack":"Levels","version":1,"channel":"production"}"#)
        #expect(try f.call("POST", "/api/apps/\(app)/releases/\(first)/approve", token: bob).status == 200)
        let update = try request(#"{"pack":"Levels","version":2,"channel":"production"}"#)
        let refused = try f.call("POST", "/api/apps/\(app)/releases/\(update)/approve", token: bob)
        #expect(try refused.status == 403 && json(refused)["error"]?["code"]?.stringValue == "fourEyes")
        let withdraw = try f.call(
            "POST", "/api/apps/\(app)/packs/Levels/withdraw", token: bob, json: #"{"channel":"production"}"#)
        #expect(withdraw.status == 200, "\(withdraw.text)")
        let again = try f.call("POST", "/api/apps/\(app)/releases/\(update)/approve", token: bob)
        #expect(
            try again.status == 403 && json(again)["error"]?["code"]?.stringValue == "fourEyes"
                && again.text.contains("bob withdrew"), "\(again.text)")
        let byCarol = try f.call("POST", "/api/apps/\(app)/releases/\(update)/approve", token: carol)
        #expect(byCarol.status == 200, "\(byCarol.text)")
        let channel = try json(try f.call("GET", "/api/apps/\(app)/channels/production", token: bob))
        #expect(channel["packs"]?.arrayElements?.first?["live"]?["version"]?.kind == .number("2"), "\(channel)")
    }
}
