import BacklotBasics
import BacklotJSON
import Testing

@testable import BacklotCommands

/// The management API's answers read through `Codable` and printed in docs/json.md's vocabulary:
/// renamed fields, null for what an answer lacks, and an answer of the wrong shape refused with
/// the field named.
@Suite struct RemoteAnswerTests {
    func answer(_ text: String) -> APIClient.Answer {
        APIClient.Answer(status: 200, body: Array(text.utf8), route: "GET /api/apps/a/packs/P/versions")
    }

    @Test func aVersionIsRenamedToTheVocabularyOfTheCommandLine() throws {
        let v = try answer(
            #"{"app":"a","pack":"P","version":2,"state":"COMPLETE","reason":null,"size":10,"received":10,"installSize":20,"archiveSHA256":"ab","format":"pack","lease":"x"}"#
        ).decode(RemoteVersion.self)
        #expect(
            try CommandJSON.line(v)
                == #"{"app":"a","archiveSHA256":"ab","format":"pack","installBytes":20,"pack":"P","packBytes":10,"reason":null,"receivedBytes":10,"state":"COMPLETE","version":2}"#
        )
        // What an answer lacks is null in the output, never left out.
        let bare = try answer(#"{"version":1,"state":"AWAITING_UPLOAD"}"#).decode(RemoteVersion.self)
        #expect(
            try CommandJSON.line(bare)
                == #"{"app":null,"archiveSHA256":null,"format":null,"installBytes":null,"pack":null,"packBytes":null,"reason":null,"receivedBytes":null,"state":"AWAITING_UPLOAD","version":1}"#
        )
    }

    @Test func anOlderServersBareIDsBecomeObjects() throws {
        let apps = try answer(#"{"apps":["a"]}"#).decode(RemoteApp.List.self)
        #expect(
            try CommandJSON.line(apps) == #"{"apps":[{"app":"a","created":null,"fourEyes":null,"quotaBytes":null}]}"#)
        let packs = try answer(#"{"packs":["P",{"id":"Q","created":"2026-12-01T00:00:00Z","versions":3,"latest":3}]}"#)
            .decode(RemotePack.List.self)
        #expect(
            try CommandJSON.line(packs.packs)
                == #"[{"created":null,"latestVersion":null,"pack":"P","versionCount":null},{"created":"2026-12-01T00:00:00Z","latestVersion":3,"pack":"Q","versionCount":3}]"#
        )
    }

    @Test func aReleasePlanPutsItsChangeAtTheTop() throws {
        var plan = try answer(
            #"{"dryRun":true,"needsApproval":true,"change":{"channel":"production","pack":"P","from":{"version":1,"rolloutPercent":null},"to":{"version":2,"rolloutPercent":2.5},"catalogVersion":7}}"#
        ).decode(RemoteReleasePlan.self)
        plan.app = "a"
        #expect(
            try CommandJSON.line(plan)
                == #"{"app":"a","catalogVersion":7,"channel":"production","dryRun":true,"from":{"rolloutPercent":null,"version":1},"needsApproval":true,"pack":"P","to":{"rolloutPercent":2.5,"version":2}}"#
        )
        #expect(plan.from.text == "version 1 for every device" && plan.to.text == "version 2 at 2.5 %")
    }

    @Test func auditDetailsKeepWhatTheServerWrote() throws {
        let list = try answer(
            #"{"entries":[{"id":9,"time":"2026-12-01T00:00:00Z","actor":{"tokenId":null,"label":"server","role":"system"},"app":"a","pack":null,"version":null,"action":"catalog.resign","details":{"channel":"beta","count":3,"big":18446744073709551615,"share":0.25,"list":[true,null]}}]}"#
        ).decode(RemoteAuditEntry.List.self)
        #expect(
            try CommandJSON.line(list)
                == #"{"entries":[{"action":"catalog.resign","actor":{"label":"server","role":"system","tokenId":null},"app":"a","details":{"big":18446744073709551615,"channel":"beta","count":3,"list":[true,null],"share":0.25},"id":9,"pack":null,"time":"2026-12-01T00:00:00Z","version":null}]}"#
        )
    }

    @Test(arguments: [
        (#"{"versions":[{"version":1,"state":3}]}"#, "versions[0].state: expected a string"),
        (#"{"versions":[{"state":"COMPLETE"}]}"#, "versions[0].version: missing"),
        (#"{"versions":[{"version":1,"state":"COMPLETE","size":-5}]}"#, "a number in it does not fit its field"),
        (#"{"versions":{}}"#, "versions"),
        (#"{"versions":[{"#, "the top level"),
    ])
    func anAnswerOfTheWrongShapeNamesTheField(body: String, named: String) throws {
        let error = try #require(throws: BacklotError.self) { try answer(body).decode(RemoteVersion.List.self) }
        #expect(error.code == .io)
        #expect(error.message.contains(named), "\(error.message)")
        #expect(error.context == "GET /api/apps/a/packs/P/versions" && error.hint?.contains("--version") == true)
    }
}
