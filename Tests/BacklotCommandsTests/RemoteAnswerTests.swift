import BacklotBasics
import BacklotJSON
import BacklotProtocol
import Testing

@testable import BacklotCommands

/// The management API's answers read through the endpoints' `Codable` types (``API``) and printed
/// in docs/json.md's vocabulary: renamed fields at the command line's edge, null for what an answer
/// leaves null, and an answer of the wrong shape refused with the field named.
@Suite struct RemoteAnswerTests {
    func answer(_ text: String) -> APIClient.Answer {
        APIClient.Answer(status: 200, body: Array(text.utf8), route: "GET /api/apps/a/packs/P/versions")
    }

    @Test func aVersionIsRenamedToTheVocabularyOfTheCommandLine() throws {
        let v = try answer(
            #"{"app":"a","pack":"P","version":2,"state":"COMPLETE","reason":null,"size":10,"received":10,"installSize":20,"archiveSHA256":"ab","format":"pack"}"#
        ).decode(API.Version.self)
        #expect(
            try CommandJSON.line(VersionOutput(v))
                == #"{"app":"a","archiveSHA256":"ab","format":"pack","installBytes":20,"notes":null,"pack":"P","packBytes":10,"reason":null,"receivedBytes":10,"state":"COMPLETE","version":2}"#
        )
        // What the answer leaves null (or out) is null in the output, never left out.
        let bare = try answer(
            #"{"app":"a","pack":"P","version":1,"state":"AWAITING_UPLOAD","size":10,"received":0,"format":"pack"}"#
        ).decode(API.Version.self)
        #expect(
            try CommandJSON.line(VersionOutput(bare))
                == #"{"app":"a","archiveSHA256":null,"format":"pack","installBytes":null,"notes":null,"pack":"P","packBytes":10,"reason":null,"receivedBytes":0,"state":"AWAITING_UPLOAD","version":1}"#
        )
    }

    @Test func appsAndPacksAreNamedAsEveryCommandNamesThem() throws {
        let apps = try answer(
            #"{"apps":[{"id":"a","created":"2026-12-01T00:00:00Z","fourEyes":true,"quotaBytes":200000000000,"secondReviewerAbove":null}]}"#
        ).decode(API.AppList.self)
        #expect(
            try CommandJSON.line(AppOutput.List(apps: apps.apps.map(AppOutput.init)))
                == #"{"apps":[{"app":"a","created":"2026-12-01T00:00:00Z","fourEyes":true,"quotaBytes":200000000000,"secondReviewerAbove":null}]}"#
        )
        let packs = try answer(
            #"{"packs":[{"id":"P","created":"2026-12-01T00:00:00Z","versions":0,"latest":null},{"id":"Q","created":"2026-12-01T00:00:00Z","versions":3,"latest":3}]}"#
        ).decode(API.PackList.self)
        #expect(
            try CommandJSON.line(packs.packs.map(PackOutput.init))
                == #"[{"created":"2026-12-01T00:00:00Z","latestVersion":null,"pack":"P","versionCount":0},{"created":"2026-12-01T00:00:00Z","latestVersion":3,"pack":"Q","versionCount":3}]"#
        )
    }

    @Test func aReleasePlanPutsItsChangeAtTheTop() throws {
        let outcome = try answer(
            #"{"dryRun":true,"needsApproval":true,"change":{"channel":"production","pack":"P","from":{"version":1,"rolloutPercent":null},"to":{"version":2,"rolloutPercent":2.5},"catalogVersion":7}}"#
        ).decode(API.ReleaseOutcome.self)
        let plan = ReleasePlanOutput(try #require(outcome.plan), app: "a")
        #expect(
            try CommandJSON.line(plan)
                == #"{"app":"a","catalogVersion":7,"channel":"production","dryRun":true,"from":{"rolloutPercent":null,"version":1},"needsApproval":true,"pack":"P","to":{"rolloutPercent":2.5,"version":2}}"#
        )
        #expect(plan.from.text == "version 1 for every device" && plan.to.text == "version 2 at 2.5 %")
        // A release made at once is not a plan.
        #expect(try answer(#"{"released":true}"#).decode(API.ReleaseOutcome.self).plan == nil)
    }

    @Test func auditEntriesArePrintedAsTheServerSendsThem() throws {
        let page = try answer(
            #"{"entries":[{"id":9,"time":"2026-12-01T00:00:00Z","actor":{"tokenId":null,"label":"server","role":"system"},"app":"a","pack":null,"version":null,"action":"catalog.resign","details":{"channel":"beta","count":"3"}}],"next":null}"#
        ).decode(API.AuditPage.self)
        #expect(
            try CommandJSON.line(page.entries)
                == #"[{"action":"catalog.resign","actor":{"label":"server","person":null,"role":"system","tokenId":null},"app":"a","details":{"channel":"beta","count":"3"},"id":9,"pack":null,"time":"2026-12-01T00:00:00Z","version":null}]"#
        )
    }

    @Test(arguments: [
        (#"{"versions":[{"app":"a","pack":"P","version":1,"state":3}]}"#, "versions[0].state: expected a string"),
        (#"{"versions":[{"state":"COMPLETE"}]}"#, "versions[0].app: missing"),
        (
            #"{"versions":[{"app":"a","pack":"P","version":1,"state":"COMPLETE","size":-5,"received":0,"format":"pack"}]}"#,
            "a number in it does not fit its field"
        ),
        (#"{"versions":{}}"#, "versions"),
        (#"{"versions":[{"#, "the top level"),
    ])
    func anAnswerOfTheWrongShapeNamesTheField(body: String, named: String) throws {
        let error = try #require(throws: BacklotError.self) { try answer(body).decode(API.VersionList.self) }
        #expect(error.code == .io)
        #expect(error.message.contains(named), "\(error.message)")
        #expect(error.context == "GET /api/apps/a/packs/P/versions" && error.hint?.contains("--version") == true)
    }
}
