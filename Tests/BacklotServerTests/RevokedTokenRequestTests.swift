import BacklotBasics
import BacklotHTTPServer
import BacklotJSON
import BacklotPostgres
import BacklotRepository
import BacklotTestSupport
import Foundation
import Testing

@testable import BacklotServer

#if canImport(Glibc)
import Glibc
#endif

/// One HTTP/1.1 connection written by hand: a head, a body in parts with pauses between them,
/// then the answer (or the connection closed without one).
final class SlowHTTPConnection {
    let fd: Int32

    init(port: UInt16) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw BacklotError(.io, "socket failed") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            close(fd)
            throw BacklotError(.io, "connect failed")
        }
        var timeout = timeval(tv_sec: 30, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    deinit { close(fd) }

    /// Sends bytes; false when the server closed the connection.
    @discardableResult
    func send(_ bytes: [UInt8]) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return false }
            sent += n
        }
        return true
    }

    func send(_ text: String) { send(Array(text.utf8)) }

    /// The head of a request with a body of `length` bytes.
    func sendHead(_ method: String, _ path: String, token: String, length: Int, type: String) {
        send(
            "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(token)\r\n"
                + "Content-Type: \(type)\r\nContent-Length: \(length)\r\n\r\n")
    }

    struct Answer {
        let status: Int
        let headers: [String: String]
        let body: String
    }

    /// The answer, or nil when the connection ends (or is reset) before a whole head arrived.
    func answer() -> Answer? {
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        func more() -> Bool {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { return false }
            data += buffer[0..<n]
            return true
        }
        let separator = Array("\r\n\r\n".utf8)
        var headEnd: Int? = nil
        while headEnd == nil {
            guard more() else { return nil }
            if data.count >= 4 {
                headEnd = (0...(data.count - 4)).first { Array(data[$0..<($0 + 4)]) == separator }
            }
        }
        let head = String(decoding: data[..<headEnd!], as: UTF8.self)
        var lines = head.components(separatedBy: "\r\n")
        let status = Int(lines.removeFirst().split(separator: " ")[1]) ?? 0
        var headers: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(
                in: .whitespaces)
        }
        let length = headers["content-length"].flatMap { Int($0) } ?? 0
        while data.count - headEnd! - 4 < length, more() {}
        let body = String(decoding: data[(headEnd! + 4)...].prefix(length), as: UTF8.self)
        return Answer(status: status, headers: headers, body: body)
    }
}

/// A token revoked or rotated while a request it opened is still arriving: the request ends
/// with 401 and does nothing (docs/protocol.md §7, "Tokens"). The token is checked again when a
/// JSON body has arrived, every few MB or seconds of an upload, and before an upload completes;
/// and a JSON body has a deadline in all, not only the idle time-out.
@Suite(.serialized) struct RevokedTokenRequestTests {
    final class Fixture: @unchecked Sendable {
        let dir: TemporaryDirectory
        let repository: Repository
        /// Another instance on the same database, as a second server would be.
        let other: Repository
        let server: HostingServer
        let admin: String

        init(configuration: HTTPServer.Configuration = .init(port: 0)) throws {
            dir = try TemporaryDirectory("revoked")
            repository = try Repository(directory: RepositoryDirectory(path: dir.at("data")))
            server = try HostingServer(repository: repository, configuration: configuration)
            admin = try String(contentsOfFile: repository.adminTokenPath, encoding: .utf8).trimmingCharacters(
                in: .whitespacesAndNewlines)
            other = try Repository(directory: RepositoryDirectory(path: dir.at("data")))
        }

        deinit {
            server.stop(grace: 0)
            dir.remove()
        }

        func call(_ method: String, _ path: String, token: String, json: String? = nil) throws -> Curl.Result {
            var headers = ["Authorization": "Bearer \(token)"]
            var extra: [String] = []
            if let json {
                headers["Content-Type"] = "application/json"
                extra = ["--data-binary", json]
            }
            return try Curl.run(server.baseURL + path.dropFirst(), method: method, headers: headers, extra: extra)
        }

        /// A version awaiting an upload of `size` bytes, created by `token`.
        func version(size: Int, token: String) throws -> Int {
            if (try? repository.apps.app("com.example.game")) == nil {
                try repository.apps.create("com.example.game")
                try repository.apps.createPack(app: "com.example.game", id: "Levels")
            }
            let r = try call(
                "POST", "/api/apps/com.example.game/packs/Levels/versions", token: token, json: "{\"size\":\(size)}")
            #expect(r.status == 201, "\(r.text)")
            return try JSONReader(source: "answer").read(r.body).root["version"]?.integer(as: Int.self) ?? 0
        }

        func state(_ number: Int) throws -> VersionInfo {
            try repository.uploads.version(app: "com.example.game", pack: "Levels", number: number)
        }
    }

    @Test func aRevokedAdminTokenTricklingATokenRequestGets401AndMintsNothing() throws {
        let f = try Fixture()
        let second = try f.repository.tokens.issue(role: .admin, label: "second admin")
        let before = try f.repository.tokens.list().count
        let body = Array(#"{"role":"admin","label":"minted"}"#.utf8)
        let c = try SlowHTTPConnection(port: f.server.port)
        c.sendHead("POST", "/api/tokens", token: second.token, length: body.count, type: "application/json")
        c.send(Array(body.prefix(5)))
        Thread.sleep(forTimeInterval: 0.3)
        // Revoked through another instance of the database, while the body is still arriving.
        try f.other.tokens.revoke(id: second.id)
        c.send(Array(body.dropFirst(5)))
        let answer = try #require(c.answer())
        #expect(answer.status == 401, "\(answer.body)")
        #expect(answer.headers["www-authenticate"] == "Bearer")
        #expect(answer.body.contains("revoked"), "\(answer.body)")
        #expect(try f.repository.tokens.list().count == before)
        #expect(try f.repository.tokens.list().allSatisfy { $0.label != "minted" })
    }

    @Test func aTokenRotatedWhileItsJSONBodyArrivesGets401AndChangesNothing() throws {
        let f = try Fixture()
        let body = Array(#"{"id":"com.example.late"}"#.utf8)
        let c = try SlowHTTPConnection(port: f.server.port)
        c.sendHead("POST", "/api/apps", token: f.admin, length: body.count, type: "application/json")
        c.send(Array(body.prefix(3)))
        Thread.sleep(forTimeInterval: 0.3)
        let rotated = try f.other.tokens.rotate(id: try f.repository.tokens.authenticate(f.admin).id)
        c.send(Array(body.dropFirst(3)))
        let answer = try #require(c.answer())
        #expect(answer.status == 401, "\(answer.body)")
        #expect(try f.repository.apps.ids().isEmpty)
        // The new secret works.
        #expect(
            try f.call("POST", "/api/apps", token: rotated.token, json: #"{"id":"com.example.late"}"#).status == 201)
    }

    @Test func aJSONBodyHasADeadlineInAllNotOnlyAnIdleTimeout() throws {
        var configuration = HTTPServer.Configuration(port: 0)
        configuration.bufferedBodyDeadline = 1
        let f = try Fixture(configuration: configuration)
        let body = Array(#"{"id":"com.example.slow"}"#.utf8)
        let c = try SlowHTTPConnection(port: f.server.port)
        c.sendHead("POST", "/api/apps", token: f.admin, length: body.count, type: "application/json")
        // Each byte well within the idle time-out (30 s), the whole past the deadline.
        for byte in body.dropLast() {
            guard c.send([byte]) else { break }
            Thread.sleep(forTimeInterval: 0.1)
        }
        Thread.sleep(forTimeInterval: 0.5)
        c.send([body.last!])
        #expect(c.answer() == nil)  // closed, unanswered
        #expect(try f.repository.apps.ids().isEmpty)
        // A body sent at once is within the deadline.
        #expect(try f.call("POST", "/api/apps", token: f.admin, json: #"{"id":"com.example.fast"}"#).status == 201)
    }

    @Test func anUploadWhoseTokenIsRevokedBeforeItsLastByteIsNotCompleted() throws {
        let f = try Fixture()
        let uploader = try f.repository.tokens.issue(role: .uploader, label: "CI")
        let bytes = [UInt8](repeating: 7, count: 4096)
        let number = try f.version(size: bytes.count, token: uploader.token)
        let c = try SlowHTTPConnection(port: f.server.port)
        c.sendHead(
            "PUT", "/api/apps/com.example.game/packs/Levels/versions/\(number)/archive", token: uploader.token,
            length: bytes.count, type: "application/octet-stream")
        c.send(Array(bytes.prefix(1000)))
        Thread.sleep(forTimeInterval: 0.3)
        try f.other.tokens.revoke(id: uploader.id)
        c.send(Array(bytes.dropFirst(1000)))
        let answer = try #require(c.answer())
        #expect(answer.status == 401, "\(answer.body)")
        // The bytes may stay; the version does not complete.
        let v = try f.state(number)
        #expect(v.state == .awaitingUpload, "\(v.state)")
        f.repository.uploads.waitForProcessing()
        #expect(try f.state(number).state == .awaitingUpload)
        // A token that works may end it: an empty PUT at the last byte.
        let end = try Curl.run(
            f.server.baseURL + "api/apps/com.example.game/packs/Levels/versions/\(number)/archive", method: "PUT",
            headers: [
                "Authorization": "Bearer \(f.admin)", "Upload-Offset": String(v.received),
                "Content-Type": "application/octet-stream",
            ], extra: ["--data-binary", ""])
        #expect(v.received == UInt64(bytes.count) ? end.status == 202 : end.status == 200, "\(end.status) \(end.text)")
    }

    @Test func aLongUploadChecksItsTokenAgainOnTheWay() throws {
        let f = try Fixture()
        let uploader = try f.repository.tokens.issue(role: .uploader, label: "CI")
        let size = 6 << 20
        let number = try f.version(size: size, token: uploader.token)
        let c = try SlowHTTPConnection(port: f.server.port)
        c.sendHead(
            "PUT", "/api/apps/com.example.game/packs/Levels/versions/\(number)/archive", token: uploader.token,
            length: size, type: "application/octet-stream")
        let part = [UInt8](repeating: 1, count: 1 << 20)
        c.send(part)
        Thread.sleep(forTimeInterval: 0.3)
        try f.other.tokens.revoke(id: uploader.id)
        // More than the interval between checks, then the rest: refused on the way.
        Thread.sleep(
            forTimeInterval: Double(UploadReceiver.recheckInterval.components.seconds) + 0.5)
        for _ in 1..<6 { guard c.send(part) else { break } }
        let answer = try #require(c.answer())
        #expect(answer.status == 401, "\(answer.body)")
        let v = try f.state(number)
        #expect(v.state == .awaitingUpload)
        #expect(v.received <= UInt64(2 << 20), "\(v.received) bytes were stored after the revocation was seen")
    }

    @Test(.requires(.postgres)) func aRevocationOnAnotherServerOfTheDatabaseStopsAnOpenRequest() throws {
        let dir = try TemporaryDirectory("revoked-pg")
        defer { dir.remove() }
        let url = try PostgresCluster.shared().createDatabase("revoked")
        let a = try Repository(directory: RepositoryDirectory(path: dir.at("a")), database: PostgresDatabase(url: url))
        let admin = try a.tokens.createInitialAdmin()
        // A copy of a's folder: servers sharing a database share its storage (StorageRecordTests).
        try FileManager.default.copyItem(atPath: dir.at("a"), toPath: dir.at("b"))
        let b = try Repository(directory: RepositoryDirectory(path: dir.at("b")), database: PostgresDatabase(url: url))
        let serverA = try HostingServer(repository: a, configuration: .init(port: 0))
        let serverB = try HostingServer(repository: b, configuration: .init(port: 0))
        defer {
            serverA.stop(grace: 0)
            serverB.stop(grace: 0)
        }
        let second = try a.tokens.issue(role: .admin, label: "second admin")
        let body = Array(#"{"role":"admin","label":"minted"}"#.utf8)
        let c = try SlowHTTPConnection(port: serverA.port)
        c.sendHead("POST", "/api/tokens", token: second.token, length: body.count, type: "application/json")
        c.send(Array(body.prefix(4)))
        Thread.sleep(forTimeInterval: 0.3)
        let revoked = try Curl.run(
            serverB.baseURL + "api/tokens/\(second.id)", method: "DELETE", headers: ["Authorization": "Bearer \(admin)"]
        )
        #expect(revoked.status == 200, "\(revoked.text)")
        c.send(Array(body.dropFirst(4)))
        let answer = try #require(c.answer())
        #expect(answer.status == 401, "\(answer.body)")
        #expect(try a.tokens.list().allSatisfy { $0.label != "minted" })
    }
}
