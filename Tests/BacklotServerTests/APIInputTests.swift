import BacklotBasics
import BacklotJSON
import BacklotRepository
import BacklotTestSupport
import Foundation
import Testing

@testable import BacklotServer

#if canImport(Glibc)
import Glibc
#endif

/// Numbers from outside, objects of other apps, and bodies over the limit: each gets a clear
/// answer (400, 404, 413) and the server keeps answering.
@Suite(.serialized) struct APIInputTests {
    typealias Fixture = ManagementAPITests.Fixture

    /// An app "a" with pack Levels, version 1 COMPLETE, and a pending production request 1; an app "b".
    func prepared() throws -> Fixture {
        let f = try Fixture()
        for app in ["a", "b"] {
            #expect(try f.call("POST", "/api/apps", token: f.admin, json: "{\"id\":\"\(app)\"}").status == 201)
            #expect(
                try f.call("POST", "/api/apps/\(app)/packs", token: f.admin, json: #"{"id":"Levels"}"#).status == 201)
        }
        let archive = try f.packArchive()
        let size = try FileDescriptor.openForReading(archive).size()
        #expect(
            try f.call("POST", "/api/apps/a/packs/Levels/versions", token: f.admin, json: "{\"size\":\(size)}").status
                == 201)
        #expect(
            try f.call("PUT", "/api/apps/a/packs/Levels/versions/1/archive", token: f.admin, file: archive).status
                == 202)
        #expect(try f.waitUntilProcessed("a", "Levels", 1)["state"]?.stringValue == "COMPLETE")
        #expect(
            try f.call(
                "POST", "/api/apps/a/releases", token: f.admin,
                json: #"{"pack":"Levels","version":1,"channel":"production"}"#
            ).status == 202)
        return f
    }

    static let badNumbers = [
        "18446744073709551615", "18446744073709551616", "99999999999999999999999999999", "-1", "-9223372036854775809",
        "1.5", "1e3", "1E+2", "\"1\"", "null", "true", "[1]", "{}",
    ]

    @Test func everyNumericFieldRefusesNumbersThatDoNotFitWithA400() throws {
        let f = try prepared()
        // Body fields: (route, template with NUMBER, field name).
        let bodies: [(String, String, String)] = [
            ("/api/apps/a/packs/Levels/versions", #"{"size":NUMBER}"#, "size"),
            ("/api/apps/a/releases", #"{"pack":"Levels","version":NUMBER,"channel":"internal"}"#, "version"),
            (
                "/api/apps/a/releases", #"{"pack":"Levels","version":1,"channel":"production","rollout":NUMBER}"#,
                "rollout"
            ),
            ("/api/apps/a/packs/Levels/rollback", #"{"channel":"internal","version":NUMBER}"#, "version"),
            ("/api/apps/a/packs/Levels/rollout", #"{"percent":NUMBER}"#, "percent"),
        ]
        for (path, template, field) in bodies {
            var values = Self.badNumbers + ["0"]
            if field == "rollout" || field == "percent" {  // fractions are fine there; out-of-range values are not
                values = [
                    "0", "-1", "100.5", "1e999", "-1e999", "0.001", "\"50\"", "true", "[1]", "18446744073709551615",
                ]
                if field == "rollout" { values.removeAll { $0 == "null" } }
                if field == "percent" { values.removeAll { $0 == "0" } }  // 0 halts a rollout
            }
            // no version: roll back one step
            if field == "version", path.hasSuffix("/rollback") { values.removeAll { $0 == "null" } }
            for value in values {
                let r = try f.call(
                    "POST", path, token: f.admin, json: template.replacingOccurrences(of: "NUMBER", with: value))
                #expect(
                    r.status == 400 && r.text.contains("\\\"\(field)\\\""),
                    "\(path) \(field)=\(value) → \(r.status) \(r.text)")
            }
        }
        // Path parameters.
        let paths = [
            "GET /api/apps/a/packs/Levels/versions/N", "DELETE /api/apps/a/packs/Levels/versions/N",
            "PUT /api/apps/a/packs/Levels/versions/N/archive", "POST /api/apps/a/releases/N/approve",
            "POST /api/apps/a/releases/N/reject",
        ]
        for route in paths {
            let parts = route.split(separator: " ")
            for value in ["18446744073709551615", "9223372036854775808", "-1", "0", "1.5", "1e3", "x", "%2B1", "01"] {
                let json = parts[1].hasSuffix("reject") ? #"{"reason":"r"}"# : nil
                let r = try f.call(
                    String(parts[0]), String(parts[1]).replacingOccurrences(of: "N", with: value), token: f.admin,
                    json: json)
                #expect(
                    r.status == 400 && r.text.contains("path parameter"), "\(route) N=\(value) → \(r.status) \(r.text)")
            }
        }
        // Headers: Upload-Offset on a version awaiting its upload.
        #expect(
            try f.call("POST", "/api/apps/a/packs/Levels/versions", token: f.admin, json: #"{"size":100}"#).status
                == 201)
        try f.dir.write("one", "a")
        for value in ["18446744073709551615", "-1", "1.5", "1e3", "x", "+1", "99999999999999999999999"] {
            let r = try f.call(
                "PUT", "/api/apps/a/packs/Levels/versions/2/archive", token: f.admin, file: f.dir.at("one"),
                headers: ["Upload-Offset": value])
            #expect(
                r.status == 400 && r.text.contains("Upload-Offset"), "Upload-Offset: \(value) → \(r.status) \(r.text)")
        }
        // Range headers that do not fit are ignored (the whole file), never fatal.
        for value in [
            "bytes=18446744073709551616-", "bytes=-18446744073709551616", "bytes=0-99999999999999999999", "bytes=-1.5",
            "bytes=+1-2",
        ] {
            let r = try Curl.run(f.server.baseURL + "v1/keys/root.json", headers: ["Range": value])
            #expect(r.status == 200 || r.status == 206 || r.status == 416, "Range: \(value) → \(r.status)")
        }
        // The server is still answering, and nothing changed.
        let versions = try f.call("GET", "/api/apps/a/packs/Levels/versions", token: f.admin)
        #expect(versions.status == 200 && versions.text.contains("\"version\":1"))
        #expect(try f.call("GET", "/api/apps/a/releases", token: f.admin).text.contains("\"status\":\"pending\""))
    }

    /// A message that names the field and the range.
    @Test func theMessageNamesTheFieldAndTheRange() throws {
        let f = try prepared()
        let r = try f.call(
            "POST", "/api/apps/a/releases", token: f.admin,
            json: #"{"pack":"Levels","version":18446744073709551615,"channel":"internal"}"#)
        #expect(r.status == 400 && r.text.contains("\\\"version\\\"") && r.text.contains("…\(Int.max)"), "\(r.text)")
        let p = try f.call("GET", "/api/apps/a/packs/Levels/versions/-3", token: f.admin)
        #expect(p.status == 400 && p.text.contains("version") && p.text.contains("1…\(Int.max)"), "\(p.text)")
    }

    @Test func objectsOfAnotherAppAreNotFoundThroughItsPath() throws {
        let f = try prepared()
        let reviewer = try f.repository.tokens.create(role: .reviewer)
        let approve = try f.call("POST", "/api/apps/b/releases/1/approve", token: reviewer)
        #expect(approve.status == 404, "\(approve.text)")
        let reject = try f.call("POST", "/api/apps/b/releases/1/reject", token: reviewer, json: #"{"reason":"no"}"#)
        #expect(reject.status == 404, "\(reject.text)")
        #expect(try f.call("GET", "/api/apps/b/packs/Levels/versions/1", token: f.admin).status == 404)
        #expect(try f.call("DELETE", "/api/apps/b/packs/Levels/versions/1", token: f.admin).status == 404)
        #expect(
            try f.call(
                "PUT", "/api/apps/b/packs/Levels/versions/1/archive", token: f.admin, file: f.packArchive(seed: 7)
            ).status == 404)
        // A release names its pack and version in the body: b's Levels has no version 1 (a's is
        // not reachable), a conflict with what b holds; an unknown app in the path is 404.
        #expect(
            try f.call(
                "POST", "/api/apps/b/releases", token: f.admin,
                json: #"{"pack":"Levels","version":1,"channel":"internal"}"#
            ).status == 409)
        // b's own Levels exists and has no version 1 (a's is not reachable): nothing to roll back to.
        #expect(
            try f.call(
                "POST", "/api/apps/b/packs/Levels/rollback", token: reviewer,
                json: #"{"channel":"internal","version":1}"#
            ).status == 409)
        #expect(
            try f.call("POST", "/api/apps/b/packs/Levels/rollout", token: reviewer, json: #"{"percent":50}"#).status
                == 409)
        // b's own Levels exists but is on no channel: a conflict, as for the rollout above.
        #expect(
            try f.call("POST", "/api/apps/b/packs/Levels/withdraw", token: reviewer, json: #"{"channel":"production"}"#)
                .status == 409)
        #expect(try f.call("GET", "/api/apps/missing/releases", token: f.admin).status == 404)
        // b's list does not show a's request; a's request is still pending, and a can approve it.
        #expect(try f.call("GET", "/api/apps/b/releases", token: f.admin).text.contains("\"releases\":[]"))
        #expect(try f.call("GET", "/api/apps/a/releases", token: f.admin).text.contains("\"status\":\"pending\""))
        #expect(try f.call("POST", "/api/apps/a/releases/1/approve", token: reviewer).status == 200)
        #expect(try Curl.run(f.server.baseURL + "v1/apps/a/production/catalog.json").status == 200)
        #expect(try Curl.run(f.server.baseURL + "v1/apps/b/production/catalog.json").status == 404)
    }

    /// A raw request: what the server writes back before the client sends any body.
    func rawHead(_ f: Fixture, _ head: String, thenSend body: [UInt8] = []) -> String {
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
        _ = head.withCString { send(fd, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
        if !body.isEmpty { _ = body.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } }
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let deadline = ContinuousClock.now + .seconds(30)  // what arrives by then is the answer
        while ContinuousClock.now < deadline {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { break }
            answer += buffer.prefix(n)
            if let text = String(validating: answer, as: UTF8.self), text.contains("\r\n\r\n"), text.contains("}}") {
                break
            }
        }
        return String(decoding: answer, as: UTF8.self)
    }

    @Test func aBodyOverTheLimitGets413BeforeItIsSent() throws {
        let f = try Fixture()
        let limit = ManagementAPI.bodyLimit
        // Declared larger: 413 with the JSON error at once, never "100 Continue".
        let answer = rawHead(
            f,
            "POST /api/apps HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(f.admin)\r\nContent-Type: application/json\r\n"
                + "Content-Length: \(limit + 1)\r\nExpect: 100-continue\r\n\r\n")
        #expect(
            answer.hasPrefix("HTTP/1.1 413") && answer.contains("\"code\":\"tooLarge\"")
                && !answer.contains("100 Continue"), "\(answer)")
        // curl sending the whole body (it waits for 100 Continue, then gives up waiting and sends) sees the 413 too.
        try f.dir.write("big.json", [UInt8](repeating: UInt8(ascii: " "), count: limit + 10))
        let curl = try f.call(
            "POST", "/api/apps", token: f.admin, headers: ["Content-Type": "application/json"],
            body: f.dir.at("big.json"))
        #expect(curl.status == 413 && curl.text.contains("tooLarge"), "\(curl.status) \(curl.text)")
        // Chunked: refused as soon as the limit is passed.
        let chunked = try f.call(
            "POST", "/api/apps", token: f.admin,
            headers: ["Content-Type": "application/json", "Transfer-Encoding": "chunked"],
            body: f.dir.at("big.json"))
        #expect(chunked.status == 413 && chunked.text.contains("tooLarge"), "\(chunked.status) \(chunked.text)")
        // A body at the limit is read (and found to be bad JSON: 400, not 413).
        try f.dir.write("limit.json", [UInt8](repeating: UInt8(ascii: " "), count: limit))
        #expect(
            try f.call(
                "POST", "/api/apps", token: f.admin, headers: ["Content-Type": "application/json"],
                body: f.dir.at("limit.json")
            ).status == 400)
        #expect(try f.call("GET", "/api/apps", token: f.admin).status == 200)
    }
}
