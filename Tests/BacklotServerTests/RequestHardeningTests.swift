import BacklotBasics
import BacklotHTTPServer
import BacklotJSON
import BacklotRepository
import BacklotTestSupport
import Foundation
import Testing

@testable import BacklotServer

/// What a server in front of other software must refuse or say: uploads tied to the token that
/// started them, encoded separators in paths, a body framed two ways, the published tree's
/// security headers, and error answers that never name a server path.
@Suite(.serialized) struct RequestHardeningTests {
    final class Fixture: @unchecked Sendable {
        let dir: TemporaryDirectory
        let repository: Repository
        let server: HostingServer
        let admin: String
        let app = "com.example.game"

        init() throws {
            dir = try TemporaryDirectory("hardening")
            repository = try Repository(directory: RepositoryDirectory(path: dir.at("data")))
            server = try HostingServer(repository: repository, configuration: .init(port: 0))
            admin = try String(contentsOfFile: repository.adminTokenPath, encoding: .utf8).trimmingCharacters(
                in: .whitespacesAndNewlines)
        }

        deinit {
            server.stop(grace: 0)
            dir.remove()
        }

        func call(
            _ method: String, _ path: String, token: String? = nil, json: String? = nil,
            headers: [String: String] = [:], extra: [String] = [], pathAsIs: Bool = false
        ) throws -> Curl.Result {
            var h = headers
            if let token { h["Authorization"] = "Bearer \(token)" }
            var e = extra
            if let json {
                h["Content-Type"] = "application/json"
                e += ["--data-binary", json]
            }
            return try Curl.run(
                server.baseURL + path.dropFirst(), method: method, headers: h, pathAsIs: pathAsIs, extra: e)
        }

        /// A `PUT` of `bytes` to a version's archive from `offset`.
        func put(_ number: Int, _ bytes: [UInt8], offset: Int, token: String) throws -> Curl.Result {
            let file = dir.at("part-\(UUID().uuidString)")
            try Data(bytes).write(to: URL(fileURLWithPath: file))
            return try call(
                "PUT", "/api/apps/\(app)/packs/Levels/versions/\(number)/archive", token: token,
                headers: ["Upload-Offset": String(offset), "Content-Type": "application/octet-stream"],
                extra: ["--data-binary", "@" + file])
        }

        func createVersion(size: Int, token: String, sha: String? = nil) throws -> Int {
            let digest = sha.map { ",\"archiveSHA256\":\"\($0)\"" } ?? ""
            let r = try call(
                "POST", "/api/apps/\(app)/packs/Levels/versions", token: token, json: "{\"size\":\(size)\(digest)}")
            #expect(r.status == 201 || r.status == 200, "\(r.text)")
            return try JSONReader(source: "answer").read(r.body).root["version"]?.integer(as: Int.self) ?? 0
        }
    }

    // MARK: Uploads belong to the token that created the version

    @Test func anotherUploaderCanNeitherResumeNorFinishAnUpload() throws {
        let f = try Fixture()
        try f.repository.apps.create(f.app)
        try f.repository.apps.createPack(app: f.app, id: "Levels")
        let owner = try f.repository.tokens.issue(role: .uploader, label: "CI main")
        let intruder = try f.repository.tokens.issue(role: .uploader, label: "CI fork")
        let bytes = [UInt8](repeating: 3, count: 2000)
        let number = try f.createVersion(size: bytes.count, token: owner.token)
        #expect(try f.put(number, Array(bytes.prefix(500)), offset: 0, token: owner.token).status == 200)

        for (offset, part) in [(500, Array(bytes.dropFirst(500))), (0, bytes), (500, [])] {
            let refused = try f.put(number, part, offset: offset, token: intruder.token)
            #expect(refused.status == 403, "\(refused.status) \(refused.text)")
            #expect(refused.text.contains("\"code\":\"forbidden\""), "\(refused.text)")
            #expect(refused.text.contains("token \(owner.id)") && refused.text.contains("CI main"), "\(refused.text)")
            #expect(!refused.text.contains(owner.token) && !refused.text.contains(intruder.token))
        }
        let v = try f.repository.uploads.version(app: f.app, pack: "Levels", number: number)
        #expect(v.state == .awaitingUpload && v.received == 500)
        // The owner, and an admin, may continue.
        #expect(try f.put(number, Array(bytes[500..<1000]), offset: 500, token: owner.token).status == 200)
        let done = try f.put(number, Array(bytes.dropFirst(1000)), offset: 1000, token: f.admin)
        #expect(done.status == 202, "\(done.text)")
    }

    @Test func aVersionFoundByItsDigestIsStillUploadedOnlyByItsToken() throws {
        let f = try Fixture()
        try f.repository.apps.create(f.app)
        try f.repository.apps.createPack(app: f.app, id: "Levels")
        let owner = try f.repository.tokens.issue(role: .uploader, label: "first")
        let other = try f.repository.tokens.issue(role: .uploader, label: "second")
        let sha = String(repeating: "ab", count: 32)
        let number = try f.createVersion(size: 1000, token: owner.token, sha: sha)
        let found = try f.createVersion(size: 1000, token: other.token, sha: sha)
        #expect(found == number)
        let substituted = try f.put(number, [UInt8](repeating: 9, count: 1000), offset: 0, token: other.token)
        #expect(substituted.status == 403, "\(substituted.text)")
        #expect(try f.repository.uploads.version(app: f.app, pack: "Levels", number: number).received == 0)
    }

    @Test func theRepositoryRecordsWhoCreatedAVersion() throws {
        let f = try Fixture()
        try f.repository.apps.create(f.app)
        try f.repository.apps.createPack(app: f.app, id: "Levels")
        let a = try f.repository.tokens.authenticate(try f.repository.tokens.issue(role: .uploader, label: "a").token)
        let b = try f.repository.tokens.authenticate(try f.repository.tokens.issue(role: .uploader, label: "b").token)
        let admin = try f.repository.tokens.authenticate(f.admin)
        let v = try Caller.$current.withValue(a) {
            try f.repository.uploads.createVersion(app: f.app, pack: "Levels", size: 1000)
        }
        #expect {
            try f.repository.uploads.beginUpload(app: f.app, pack: "Levels", number: v.number, offset: 0, by: b)
        } throws: { ($0 as? BacklotError)?.code == .forbidden }
        try f.repository.uploads.beginUpload(app: f.app, pack: "Levels", number: v.number, offset: 0, by: a).close()
        try f.repository.uploads.beginUpload(app: f.app, pack: "Levels", number: v.number, offset: 0, by: admin).close()
        // A command on the data folder (no token) made it: any uploader may upload it.
        let local = try f.repository.uploads.createVersion(app: f.app, pack: "Levels", size: 1000)
        try f.repository.uploads.beginUpload(app: f.app, pack: "Levels", number: local.number, offset: 0, by: b).close()
    }

    // MARK: Encoded separators and double framing

    @Test func encodedSlashesBackslashesAndNulsInThePathAre400() throws {
        let f = try Fixture()
        for path in [
            "/api%2Ftokens", "/api%2ftokens", "/api/apps%2F..%2Ftokens", "/v1%2Fkeys/root.json", "/v1/keys%5croot.json",
            "/v1/keys%5Croot.json", "/v1/keys/root.json%00.pack", "/dashboard/..%2fadmin-token",
        ] {
            let r = try f.call("GET", path, token: f.admin, pathAsIs: true)
            #expect(r.status == 400, "\(path) → \(r.status) \(r.text)")
            #expect(r.text.contains("\"code\":\"badPath\""), "\(path): \(r.text)")
        }
        // Other escapes are decoded as before, and the query is not concerned.
        #expect(try f.call("GET", "/v1/keys/root%2Ejson").status == 200)
        #expect(try f.call("GET", "/v1/keys/root.json?next=%2Fa%5Cb").status == 200)
        let listed = try f.call("GET", "/api/audit?action=app.create&x=%2F", token: f.admin)
        #expect(listed.status == 200 || listed.status == 400, "\(listed.text)")
        #expect(!listed.text.contains("badPath"))
    }

    @Test func aBodyFramedByBothContentLengthAndChunkedIsRefusedBeforeDispatch() throws {
        let f = try Fixture()
        let body = #"{"id":"com.example.smuggled"}"#
        let chunked = String(body.utf8.count, radix: 16) + "\r\n" + body + "\r\n0\r\n\r\n"
        let c = try SlowHTTPConnection(port: f.server.port)
        c.send(
            "POST /api/apps HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(f.admin)\r\n"
                + "Content-Type: application/json\r\nContent-Length: \(chunked.utf8.count)\r\n"
                + "Transfer-Encoding: chunked\r\n\r\n" + chunked)
        let answer = try #require(c.answer())
        #expect(answer.status == 400, "\(answer.body)")
        #expect(answer.body.contains("Content-Length and Transfer-Encoding"), "\(answer.body)")
        #expect(try f.repository.apps.ids().isEmpty)
        // Each framing alone is accepted.
        let plain = try SlowHTTPConnection(port: f.server.port)
        plain.send(
            "POST /api/apps HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(f.admin)\r\n"
                + "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked)
        #expect(plain.answer()?.status == 201)
    }

    // MARK: The published tree's headers

    @Test func thePublishedTreeSaysNosniffAndSandboxesEveryAnswer() throws {
        let f = try Fixture()
        let csp = "default-src 'none'; sandbox"
        let file = try f.call("GET", "/v1/keys/root.json")
        #expect(file.status == 200)
        let etag = try #require(file.headers["etag"])
        for (what, r) in [
            ("200", file),
            ("206", try f.call("GET", "/v1/keys/root.json", headers: ["Range": "bytes=0-3"])),
            ("304", try f.call("GET", "/v1/keys/root.json", headers: ["If-None-Match": etag])),
            ("416", try f.call("GET", "/v1/keys/root.json", headers: ["Range": "bytes=999999-"])),
            ("HEAD", try f.call("HEAD", "/v1/keys/root.json")),
            ("404", try f.call("GET", "/v1/packs/none.pack")), ("404 root", try f.call("GET", "/")),
            ("hidden", try f.call("GET", "/v1/.hidden")), ("405", try f.call("DELETE", "/v1/keys/root.json")),
        ] {
            #expect(r.headers["x-content-type-options"] == "nosniff", "\(what): \(r.headers)")
            #expect(r.headers["content-security-policy"] == csp, "\(what): \(r.headers)")
        }
        #expect(file.headers["etag"] != nil && file.headers["cache-control"] == "public, max-age=300")
        // The dashboard keeps its own policy.
        let page = try f.call("GET", "/dashboard/")
        #expect(page.status == 200)
        let pagePolicy = page.headers["content-security-policy"] ?? ""
        #expect(pagePolicy.contains("script-src 'self'") && pagePolicy != csp, "\(pagePolicy)")
    }

    // MARK: Error answers name no server path

    @Test func aFailureOfTheFileSystemIsAnsweredWithoutItsPath() throws {
        let f = try Fixture()
        try f.repository.apps.create(f.app)
        try f.repository.apps.createPack(app: f.app, id: "Levels")
        let src = try TemporaryDirectory("src")
        defer { src.remove() }
        try SamplePack.writeTree(in: src, seed: 7)
        let pack = try SamplePack.build(in: src, manifestJSON: SamplePack.manifest(id: "Levels"))
        let v = try f.repository.uploads.uploadAndProcess(
            app: f.app, pack: "Levels", bytes: Array(try Data(contentsOf: URL(fileURLWithPath: pack))))
        #expect(v.state == .complete, "\(v.reason ?? "")")
        // Publishing stages its files in DIR/staging: without it, the release fails on the server's side.
        try FileManager.default.removeItem(atPath: f.repository.directory.stagingPath)
        let r = try f.call(
            "POST", "/api/apps/\(f.app)/releases", token: f.admin,
            json: "{\"pack\":\"Levels\",\"version\":\(v.number),\"channel\":\"internal\"}")
        #expect(r.status >= 500, "\(r.status) \(r.text)")
        #expect(!r.text.contains(f.dir.path) && !r.text.contains("/staging"), "\(r.text)")
        #expect(!r.text.contains("/tmp"), "\(r.text)")
    }

    @Test func errorAnswersLeaveServerPathsOut() throws {
        let answer = ManagementAPI.response(
            for: BacklotError(
                .io, "rename failed: No such file or directory (moving /srv/data/staging/link-1 into place)",
                context: "/srv/data/staging/link-1", hint: "check that the path exists"))
        var bytes: [UInt8] = []
        if case .bytes(let b) = answer.body { bytes = b }
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(answer.status == 500)
        #expect(!text.contains("/srv"), "\(text)")
        #expect(text.contains("\"context\":null") && text.contains("[path]"), "\(text)")
        // The server's own URLs stay: they are what a client is told to use.
        let hint = "GET /api/openapi.json lists the routes"
        #expect(ManagementAPI.withoutServerPaths(hint) == hint)
        #expect(ManagementAPI.publicContext("/api/apps/a/packs/x") == "/api/apps/a/packs/x")
        #expect(ManagementAPI.publicContext("/var/lib/backlot/meta.sqlite") == nil)
        #expect(ManagementAPI.publicContext("com.example.game/Levels") == "com.example.game/Levels")
        var logged: [String] = []
        _ = ManagementAPI.response(for: CocoaError(.fileNoSuchFile)) { logged.append($0) }
        #expect(logged.count == 1)
    }
}
