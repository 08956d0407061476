import BacklotBasics
import BacklotJSON
import BacklotTestSupport
import Foundation
import Testing

@testable import BacklotServer

/// Release notes given with a version: kept as written (lines of text), answered with the version
/// and with each release request of it, refused with the line named when a line holds a control
/// character, and refused past the length limit.
@Suite(.serialized) struct ReleaseNotesTests {
    typealias Fixture = ManagementAPITests.Fixture

    func json(_ r: Curl.Result) throws -> JSONNode { try JSONReader(source: "response").read(r.body).root }

    @Test func notesAreKeptWithTheVersionAndShownWithItsRequests() throws {
        let f = try Fixture()
        #expect(try f.call("POST", "/api/apps", token: f.admin, json: #"{"id":"a"}"#).status == 201)
        #expect(try f.call("POST", "/api/apps/a/packs", token: f.admin, json: #"{"id":"Levels"}"#).status == 201)
        let archive = try f.packArchive()
        let size = try FileDescriptor.openForReading(archive).size()

        // A control character on line 2: 400, naming the line; nothing is created.
        let bad = try f.call(
            "POST", "/api/apps/a/packs/Levels/versions", token: f.admin,
            json: "{\"size\":\(size),\"notes\":\"fine\\nring \\u0007 the bell\"}")
        #expect(bad.status == 400 && bad.text.contains("line 2"), "\(bad.text)")
        let long = try f.call(
            "POST", "/api/apps/a/packs/Levels/versions", token: f.admin,
            json: "{\"size\":\(size),\"notes\":\"\(String(repeating: "x", count: 4001))\"}")
        #expect(long.status == 400 && long.text.contains("4000"), "\(long.text)")
        let none = try json(try f.call("GET", "/api/apps/a/packs/Levels/versions", token: f.admin))
        #expect(none["versions"]?.arrayElements?.isEmpty == true)

        let notes = "Level 12 reworked.\nFixes the crash on load."
        let created = try f.call(
            "POST", "/api/apps/a/packs/Levels/versions", token: f.admin,
            json: "{\"size\":\(size),\"notes\":\"Level 12 reworked.\\nFixes the crash on load.\"}")
        #expect(try created.status == 201 && json(created)["notes"]?.stringValue == notes, "\(created.text)")
        #expect(
            try f.call("PUT", "/api/apps/a/packs/Levels/versions/1/archive", token: f.admin, file: archive).status
                == 202)
        #expect(try f.waitUntilProcessed("a", "Levels", 1)["notes"]?.stringValue == notes)

        let asked = try f.call(
            "POST", "/api/apps/a/releases", token: f.admin, json: #"{"pack":"Levels","version":1,"channel":"external"}"#
        )
        #expect(try asked.status == 202 && json(asked)["request"]?["notes"]?.stringValue == notes, "\(asked.text)")
        let list = try json(try f.call("GET", "/api/apps/a/releases", token: f.admin))
        #expect(list["releases"]?.arrayElements?.first?["notes"]?.stringValue == notes)
    }
}
