import BacklotBasics
import BacklotCrypto
import BacklotJSON
import BacklotProtocol
import BacklotRepository
import BacklotTestSupport
import Foundation
import Synchronization
import Testing

@testable import BacklotServer

/// The management API over real HTTP with curl: roles, bad input, the upload → processing →
/// release pipeline, resumable uploads and conflicts.
@Suite(.serialized) struct ManagementAPITests {
    final class Fixture: @unchecked Sendable {
        let dir: TemporaryDirectory
        let repository: Repository
        let server: HostingServer
        let admin: String

        init() throws {
            dir = try TemporaryDirectory("api")
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
            _ method: String, _ path: String, token: String? = nil, json: String? = nil, file: String? = nil,
            headers: [String: String] = [:], body: String? = nil
        ) throws -> Curl.Result {
            var h = headers
            if let token { h["Authorization"] = "Bearer \(token)" }
            var extra: [String] = []
            if let json {
                extra += ["--data-binary", json]
                h["Content-Type"] = "application/json"
            }
            if let file { extra += ["--upload-file", file] }
            if let body { extra += ["--data-binary", "@" + body] }
            return try Curl.run(server.baseURL + path.dropFirst(), method: method, headers: h, extra: extra)
        }

        /// A real pack archive of the sample tree.
        func packArchive(id: String = "Levels", seed: UInt64 = 42) throws -> String {
            let src = try TemporaryDirectory("src")
            defer { src.remove() }
            try SamplePack.writeTree(in: src, seed: seed)
            let path = try SamplePack.build(in: src, manifestJSON: SamplePack.manifest(id: id))
            let kept = dir.at("\(id)-\(seed).pack")
            try FileManager.default.copyItem(atPath: path, toPath: kept)
            return kept
        }

        func waitUntilProcessed(_ app: String, _ pack: String, _ number: Int) throws -> JSONNode {
            repository.uploads.waitForProcessing()
            let r = try call("GET", "/api/apps/\(app)/packs/\(pack)/versions/\(number)", token: admin)
            return try JSONReader(source: "r").read(r.body).root
        }
    }

    @Test func tokensAndRolesAreChecked() throws {
        let f = try Fixture()
        let none = try f.call("GET", "/api/apps")
        #expect(
            none.status == 401 && none.headers["www-authenticate"] == "Bearer"
                && none.text.contains("\"code\":\"unauthorized\""))
        #expect(try f.call("GET", "/api/apps", token: "blt_wrong").status == 401)
        let reader = try f.repository.tokens.create(role: .reader)
        #expect(try f.call("GET", "/api/apps", token: reader).status == 200)
        let forbidden = try f.call("POST", "/api/apps", token: reader, json: #"{"id":"a"}"#)
        #expect(forbidden.status == 403 && forbidden.text.contains("needs the admin role"))
        let created = try f.call("POST", "/api/tokens", token: f.admin, json: #"{"role":"uploader"}"#)
        #expect(created.status == 201)
        let uploader = try JSONReader(source: "t").read(created.body).root["token"]?.stringValue ?? ""
        #expect(try f.call("POST", "/api/apps", token: uploader, json: #"{"id":"a"}"#).status == 403)
        #expect(try f.call("POST", "/api/apps", token: f.admin, json: #"{"id":"a"}"#).status == 201)
        #expect(try f.call("POST", "/api/apps/a/packs", token: uploader, json: #"{"id":"Levels"}"#).status == 201)
    }

    @Test func badInputGetsANamed400AndConflictsA409() throws {
        let f = try Fixture()
        let malformed = try f.call("POST", "/api/apps", token: f.admin, json: "{\"id\": }")
        #expect(malformed.status == 400 && malformed.text.contains("request body:1:8"), "\(malformed.text)")
        let unknown = try f.call("POST", "/api/apps", token: f.admin, json: #"{"id":"a","colour":1}"#)
        #expect(unknown.status == 400 && unknown.text.contains("unknown field \\\"colour\\\""), "\(unknown.text)")
        let badID = try f.call("POST", "/api/apps", token: f.admin, json: #"{"id":"a b"}"#)
        #expect(badID.status == 400)
        #expect(try f.call("POST", "/api/apps", token: f.admin, json: #"{"id":"a"}"#).status == 201)
        #expect(try f.call("POST", "/api/apps", token: f.admin, json: #"{"id":"a"}"#).status == 409)
        #expect(try f.call("GET", "/api/apps/missing/packs", token: f.admin).status == 404)
        #expect(try f.call("DELETE", "/api/apps", token: f.admin).status == 405)
        for path in ["/api/apps/../../etc/passwd", "/api/apps/%2e%2e/packs", "/api/apps/a/packs/..%2f..%2fx/versions"] {
            let r = try Curl.run(
                f.server.baseURL + path.dropFirst(), headers: ["Authorization": "Bearer \(f.admin)"], pathAsIs: true)
            #expect(r.status == 400 || r.status == 404, "\(path) → \(r.status)")
        }
    }

    @Test func concurrentCreatesOfOnePackGiveOneWinnerAndA409() throws {
        let f = try Fixture()
        #expect(try f.call("POST", "/api/apps", token: f.admin, json: #"{"id":"a"}"#).status == 201)
        let statuses = Mutex<[Int]>([])
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            let r = try? f.call("POST", "/api/apps/a/packs", token: f.admin, json: #"{"id":"Levels"}"#)
            statuses.withLock { $0.append(r?.status ?? 0) }
        }
        #expect(statuses.withLock { $0.sorted() } == [201, 409, 409, 409])
    }

    @Test func uploadProcessReleaseAndFetchTheSignedCatalog() throws {
        let f = try Fixture()
        #expect(try f.call("POST", "/api/apps", token: f.admin, json: #"{"id":"com.example.game"}"#).status == 201)
        #expect(
            try f.call("POST", "/api/apps/com.example.game/packs", token: f.admin, json: #"{"id":"Levels"}"#).status
                == 201)
        let archive = try f.packArchive()
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: archive)))
        let created = try f.call(
            "POST", "/api/apps/com.example.game/packs/Levels/versions", token: f.admin,
            json: "{\"size\":\(bytes.count)}")
        #expect(created.status == 201 && created.text.contains("AWAITING_UPLOAD"))

        // First half, then the connection "drops"; the server reports what arrived and the rest follows.
        let half = bytes.count / 2
        try Data(bytes[..<half]).write(to: URL(fileURLWithPath: f.dir.at("first")))
        try Data(bytes[half...]).write(to: URL(fileURLWithPath: f.dir.at("second")))
        let part = try f.call(
            "PUT", "/api/apps/com.example.game/packs/Levels/versions/1/archive", token: f.admin, file: f.dir.at("first")
        )
        #expect(part.status == 200 && part.text.contains("\"received\":\(half)"), "\(part.text)")
        let wrongOffset = try f.call(
            "PUT", "/api/apps/com.example.game/packs/Levels/versions/1/archive", token: f.admin,
            file: f.dir.at("second"),
            headers: ["Upload-Offset": "0"])
        #expect(wrongOffset.status == 409)
        let rest = try f.call(
            "PUT", "/api/apps/com.example.game/packs/Levels/versions/1/archive", token: f.admin,
            file: f.dir.at("second"),
            headers: ["Upload-Offset": String(half)])
        #expect(rest.status == 202, "\(rest.text)")
        let processed = try f.waitUntilProcessed("com.example.game", "Levels", 1)
        #expect(processed["state"]?.stringValue == "COMPLETE", "\(processed.serialized())")

        let released = try f.call(
            "POST", "/api/apps/com.example.game/releases", token: f.admin,
            json: #"{"pack":"Levels","version":1,"channel":"internal"}"#)
        #expect(released.status == 200 && released.text.contains("\"released\":true"))
        let catalog = try Curl.run(f.server.baseURL + "v1/apps/com.example.game/internal/catalog.json")
        #expect(catalog.status == 200)
        let key = try PublicKeyFile.read(path: f.repository.directory.publicKeyPath)
        let verified = try Catalog.verify(
            catalog.body, trusting: [key], app: "com.example.game", channel: .internal, now: Date(), source: "catalog")
        let release = try #require(verified.packs.first?.release)
        // The archive URL is relative to the catalog and serves the uploaded bytes, with ranges.
        let archiveURL = URL(
            string: release.archiveURL,
            relativeTo: URL(string: f.server.baseURL + "v1/apps/com.example.game/internal/catalog.json"))!
            .absoluteString
        let full = try Curl.run(archiveURL)
        #expect(full.status == 200 && full.body == bytes)
        let index = try Curl.run(
            archiveURL,
            headers: ["Range": "bytes=\(release.indexOffset)-\(release.indexOffset + release.indexLength - 1)"])
        #expect(index.status == 206 && SHA256.hash(index.body) == release.indexSHA256)

        // Production needs a reviewer.
        let request = try f.call(
            "POST", "/api/apps/com.example.game/releases", token: f.admin,
            json: #"{"pack":"Levels","version":1,"channel":"production"}"#)
        #expect(request.status == 202)
        let reviewer = try f.repository.tokens.create(role: .reviewer)
        #expect(try f.call("POST", "/api/apps/com.example.game/releases/1/approve", token: reviewer).status == 200)
        #expect(try Curl.run(f.server.baseURL + "v1/apps/com.example.game/production/catalog.json").status == 200)
        let metrics = try Curl.run(f.server.baseURL + "metrics").text
        #expect(
            metrics.contains("backlot_uploads_total{outcome=\"completed\"} 1")
                && metrics.contains("backlot_processing_total{outcome=\"complete\"} 1"))
    }

    @Test func oversizedTruncatedAndCorruptUploadsPublishNothing() throws {
        let f = try Fixture()
        _ = try f.call("POST", "/api/apps", token: f.admin, json: #"{"id":"a"}"#)
        _ = try f.call("POST", "/api/apps/a/packs", token: f.admin, json: #"{"id":"Levels"}"#)
        let archive = try f.packArchive()
        var bytes = Array(try Data(contentsOf: URL(fileURLWithPath: archive)))
        _ = try f.call(
            "POST", "/api/apps/a/packs/Levels/versions", token: f.admin, json: "{\"size\":\(bytes.count - 10)}")
        let tooBig = try f.call("PUT", "/api/apps/a/packs/Levels/versions/1/archive", token: f.admin, file: archive)
        #expect(tooBig.status == 413, "\(tooBig.text)")
        #expect(try f.waitUntilProcessed("a", "Levels", 1)["received"]?.kind == .number("0"))

        bytes[500] ^= 0xFF
        try Data(bytes).write(to: URL(fileURLWithPath: f.dir.at("bad.pack")))
        _ = try f.call("POST", "/api/apps/a/packs/Levels/versions", token: f.admin, json: "{\"size\":\(bytes.count)}")
        #expect(
            try f.call("PUT", "/api/apps/a/packs/Levels/versions/2/archive", token: f.admin, file: f.dir.at("bad.pack"))
                .status == 202)
        let failed = try f.waitUntilProcessed("a", "Levels", 2)
        #expect(
            failed["state"]?.stringValue == "FAILED" && failed["reason"]?.stringValue?.contains("chunk") == true,
            "\(failed.serialized())")
        let release = try f.call(
            "POST", "/api/apps/a/releases", token: f.admin, json: #"{"pack":"Levels","version":2,"channel":"internal"}"#
        )
        #expect(release.status == 409)
        #expect(try Curl.run(f.server.baseURL + "v1/apps/a/internal/catalog.json").status == 404)
    }

    /// Header values that would overflow an addition are refused, not fatal; a finished upload stays finished.
    @Test func hugeContentLengthsAndLateUploadsAreRefused() throws {
        let f = try Fixture()
        _ = try f.call("POST", "/api/apps", token: f.admin, json: #"{"id":"a"}"#)
        _ = try f.call("POST", "/api/apps/a/packs", token: f.admin, json: #"{"id":"Levels"}"#)
        _ = try f.call("POST", "/api/apps/a/packs/Levels/versions", token: f.admin, json: #"{"size":100}"#)
        try f.dir.write("two", "ab")
        #expect(
            try f.call("PUT", "/api/apps/a/packs/Levels/versions/1/archive", token: f.admin, file: f.dir.at("two"))
                .status == 200)
        // A raw request declaring 2^64 - 2 bytes from offset 2.
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = f.server.port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        let head =
            "PUT /api/apps/a/packs/Levels/versions/1/archive HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(f.admin)\r\nUpload-Offset: 2\r\nContent-Length: 18446744073709551614\r\n\r\n"
        _ = head.withCString { send(fd, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = recv(fd, &buffer, buffer.count, 0)
        let answer = String(decoding: buffer.prefix(max(0, n)), as: UTF8.self)
        #expect(answer.hasPrefix("HTTP/1.1 413") || answer.hasPrefix("HTTP/1.1 400"), "\(answer)")
        // The server is still alive.
        #expect(try f.call("GET", "/api/apps", token: f.admin).status == 200)
    }

    @Test func theOpenAPIDocumentListsEveryRoute() throws {
        let f = try Fixture()
        let r = try Curl.run(f.server.baseURL + "api/openapi.json")
        #expect(r.status == 200)
        let doc = try JSONReader(source: "openapi").read(r.body).root
        #expect(doc["openapi"]?.stringValue?.hasPrefix("3.") == true)
        for route in ManagementAPI.routes {
            let methods = doc["paths"]?[route.template]
            #expect(
                methods?[route.method.lowercased()] != nil,
                "\(route.method) \(route.template) is missing from the OpenAPI document")
        }
        // docs/openapi.json is the same document; BACKLOT_REGENERATE_OPENAPI=1 writes it.
        let docs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
            .appendingPathComponent("docs/openapi.json")
        if ProcessInfo.processInfo.environment["BACKLOT_REGENERATE_OPENAPI"] == "1" {
            try Data(r.body).write(to: docs)
        }
        #expect(
            (try? Data(contentsOf: docs)).map(Array.init) == r.body,
            "docs/openapi.json differs from the generated document; regenerate it with: BACKLOT_REGENERATE_OPENAPI=1 swift test --skip-build --filter theOpenAPIDocumentListsEveryRoute"
        )
        // Every operation: an operationId (unique), a tag, typed path parameters, and the statuses it shares.
        var operationIDs = Set<String>()
        for route in ManagementAPI.routes {
            let op = try #require(doc["paths"]?[route.template]?[route.method.lowercased()])
            let id = try #require(op["operationId"]?.stringValue)
            #expect(operationIDs.insert(id).inserted, "\(id) twice")
            #expect(op["tags"]?.arrayElements?.isEmpty == false)
            for parameter in op["parameters"]?.arrayElements ?? [] where parameter["in"]?.stringValue == "path" {
                let name = parameter["name"]?.stringValue ?? ""
                let type = parameter["schema"]?["type"]?.stringValue
                if name == "version" || name == "id" { #expect(type == "integer", "\(route.template) \(name)") }
                if name == "app" || name == "pack" {
                    #expect(parameter["schema"]?["pattern"]?.stringValue == APISchemas.idPattern)
                }
            }
            let responses = op["responses"]
            if route.role != nil {
                #expect(responses?["401"]?["headers"]?["WWW-Authenticate"] != nil && responses?["403"] != nil, "\(id)")
                #expect(
                    responses?["503"]?["headers"]?["Retry-After"] != nil
                        && responses?["405"]?["headers"]?["Allow"] != nil, "\(id)")
            }
        }
        #expect(
            doc["paths"]?["/api/apps/{app}/packs/{pack}/versions"]?["post"]?["responses"]?["201"]?["headers"]?[
                "Location"] != nil)
        #expect(doc["components"]?["schemas"]?["Version"]?["properties"]?["format"] != nil)
        // And the document lists no route the server lacks.
        for member in doc["paths"]?.objectMembers ?? [] {
            for op in member.value.objectMembers ?? [] {
                #expect(
                    ManagementAPI.routes.contains { $0.template == member.key && $0.method.lowercased() == op.key },
                    "\(op.key) \(member.key)")
            }
        }
    }
}

#if canImport(Glibc)
import Glibc
#endif
