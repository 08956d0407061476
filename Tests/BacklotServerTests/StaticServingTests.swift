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

#if canImport(Glibc)
import Glibc
#endif

/// The hosting server over real HTTP and HTTPS, with curl as the client.
@Suite(.serialized) struct StaticServingTests {
    /// A data folder with a pack-like file and a catalog-like file in its published tree.
    func repository() throws -> (TemporaryDirectory, RepositoryDirectory, pack: [UInt8], packName: String) {
        let dir = try TemporaryDirectory("serve")
        let repo = try RepositoryDirectory(path: dir.at("data"))
        var g = SeededGenerator(seed: 9)
        let pack = g.bytes(100_000)
        let name = SHA256.hash(pack).hex + ".pack"
        try FileSystem.makeDirectory(repo.publicTreePath + "/v1/packs")
        try RepositoryDirectory.writePublic(bytes: pack, to: repo.publicTreePath + "/v1/packs/" + name)
        return (dir, repo, pack, name)
    }

    @Test func getHeadRangesETagsAndCacheHeaders() throws {
        let (dir, repo, pack, name) = try repository()
        defer { dir.remove() }
        let server = try HostingServer(repository: try Repository(directory: repo), configuration: .init(port: 0))
        defer { server.stop() }
        let url = server.baseURL + "v1/packs/" + name

        let full = try Curl.run(url)
        #expect(full.status == 200 && full.body == pack)
        #expect(full.headers["etag"] == "\"\(name.dropLast(5))\"")
        #expect(full.headers["cache-control"] == "public, max-age=31536000, immutable")
        #expect(full.headers["accept-ranges"] == "bytes")

        let head = try Curl.run(url, method: "HEAD")
        // curl -I writes the head, never a body
        #expect(head.status == 200 && head.headers["content-length"] == "100000")

        let middle = try Curl.run(url, headers: ["Range": "bytes=100-1123"])
        #expect(middle.status == 206 && middle.body == Array(pack[100...1123]))
        #expect(middle.headers["content-range"] == "bytes 100-1123/100000")
        let open = try Curl.run(url, headers: ["Range": "bytes=99990-"])
        #expect(open.status == 206 && open.body == Array(pack[99990...]))
        let suffix = try Curl.run(url, headers: ["Range": "bytes=-10"])
        #expect(suffix.status == 206 && suffix.body == Array(pack.suffix(10)))
        #expect(suffix.headers["content-range"] == "bytes 99990-99999/100000")
        let past = try Curl.run(url, headers: ["Range": "bytes=100000-"])
        #expect(past.status == 416 && past.headers["content-range"] == "bytes */100000")
        let clipped = try Curl.run(url, headers: ["Range": "bytes=99999-200000"])
        #expect(clipped.status == 206 && clipped.body == [pack[99999]])
        let multi = try Curl.run(url, headers: ["Range": "bytes=0-1,5-6"])
        #expect(multi.status == 200 && multi.body.count == 100_000)

        let cached = try Curl.run(url, headers: ["If-None-Match": full.headers["etag"]!])
        #expect(cached.status == 304 && cached.body.isEmpty)
        let stale = try Curl.run(url, headers: ["If-None-Match": "\"other\""])
        #expect(stale.status == 200)

        let keys = try Curl.run(server.baseURL + "v1/keys/root.json")
        #expect(keys.status == 200 && keys.headers["cache-control"] == "public, max-age=300")
        #expect(keys.headers["content-type"] == "application/json")
        let again = try Curl.run(
            server.baseURL + "v1/keys/root.json", headers: ["If-None-Match": keys.headers["etag"]!])
        #expect(again.status == 304)
    }

    @Test func pathsNeverLeaveTheTreeAndOnlyGetAndHeadAreServed() throws {
        let (dir, repo, _, _) = try repository()
        defer { dir.remove() }
        try dir.write("secret.txt", "secret")
        #expect(symlink(dir.at("secret.txt"), repo.publicTreePath + "/v1/link.txt") == 0)
        let server = try HostingServer(repository: try Repository(directory: repo), configuration: .init(port: 0))
        defer { server.stop() }
        for path in [
            "../secret.txt", "v1/../../secret.txt", "v1/%2e%2e/%2e%2e/secret.txt", "v1//keys/root.json",
            "v1/./keys/root.json",
        ] {
            let r = try Curl.run(server.baseURL + path, pathAsIs: true)
            #expect(r.status == 400 || r.status == 404, "\(path) → \(r.status)")
            #expect(!r.text.contains("secret"), "\(path)")
        }
        #expect(try Curl.run(server.baseURL + "v1/link.txt").status == 404)
        #expect(try Curl.run(server.baseURL + "v1/keys").status == 404)
        #expect(try Curl.run(server.baseURL + "v1/keys/missing.json").status == 404)
        let post = try Curl.run(server.baseURL + "v1/keys/root.json", method: "POST")
        #expect(post.status == 405 && post.headers["allow"] == "GET, HEAD")
    }

    @Test func theAccessLogHasOneJSONLinePerRequest() throws {
        let (dir, repo, _, name) = try repository()
        defer { dir.remove() }
        let lines = Mutex<[String]>([])
        let server = try HostingServer(repository: try Repository(directory: repo), configuration: .init(port: 0)) {
            line in
            lines.withLock { $0.append(line) }
        }
        _ = try Curl.run(server.baseURL + "v1/packs/" + name, headers: ["Range": "bytes=0-9"])
        server.stop()
        let line = try #require(lines.withLock { $0.first })
        let json = try JSONReader(source: "log", allowsComments: false, allowsTrailingCommas: false).read(line).root
        #expect(
            json["method"]?.stringValue == "GET" && json["status"]?.serialized() == "206"
                && json["bytes"]?.serialized() == "10")
        #expect(
            json["path"]?.stringValue == "/v1/packs/" + name && json["remote"]?.stringValue == "127.0.0.1"
                && json["range"]?.stringValue == "bytes=0-9")
        #expect(json["time"]?.stringValue != nil && json["ms"] != nil && json["route"]?.stringValue == "static")
    }

    @Test func metricsCountRequestsByRouteAndStatus() throws {
        let (dir, repo, _, name) = try repository()
        defer { dir.remove() }
        let server = try HostingServer(repository: try Repository(directory: repo), configuration: .init(port: 0))
        defer { server.stop() }
        _ = try Curl.run(server.baseURL + "v1/packs/" + name)
        _ = try Curl.run(server.baseURL + "nope")
        // A request is counted in its completion callback, which runs after its answer is sent:
        // the scrape right after may come first.
        var metrics = try Curl.run(server.baseURL + "metrics")
        try Wait.until("the 404 is counted", detail: { metrics.text }) {
            metrics = try Curl.run(server.baseURL + "metrics")
            return metrics.text.contains("backlot_http_requests_total{route=\"static\",status=\"404\"} 1")
        }
        #expect(metrics.status == 200)
        #expect(metrics.text.contains("backlot_http_requests_total{route=\"static\",status=\"200\"} 1"))
        #expect(metrics.text.contains("backlot_http_response_bytes_total"))
    }

    @Test func aClientSendingOneByteASecondDoesNotBlockOthers() throws {
        let (dir, repo, pack, name) = try repository()
        defer { dir.remove() }
        let server = try HostingServer(
            repository: try Repository(directory: repo), configuration: .init(port: 0, connectionTimeout: 30))
        defer { server.stop(grace: 0) }
        // A raw connection that has sent only part of its request head.
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = server.port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        #expect(connected == 0)
        _ = "GET /v1/keys/ro".withCString { send(fd, $0, 15, Int32(MSG_NOSIGNAL)) }
        // Others are served meanwhile.
        for _ in 0..<3 {
            let r = try Curl.run(server.baseURL + "v1/packs/" + name)
            #expect(r.status == 200 && r.body == pack)
        }
    }
}

@Suite(.serialized) struct LocalTLSTests {
    func openssl(_ args: [String]) throws -> (Int32, String) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        p.arguments = args
        let pipe = Pipe()
        p.standardOutput = pipe
        p.standardError = pipe
        try p.run()
        let out = pipe.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return (p.terminationStatus, String(decoding: out, as: UTF8.self))
    }

    @Test func autoTLSMakesACertificateAppleDevicesAcceptAndReusesIt() throws {
        let dir = try TemporaryDirectory("tls")
        defer { dir.remove() }
        let repo = try RepositoryDirectory(path: dir.at("data"))
        let first = try LocalTLS.prepare(in: repo, hostnames: ["assets.test", "192.0.2.7"])
        #expect(first.created)
        let server = repo.tlsPath + "/server.pem"
        #expect(try openssl(["verify", "-CAfile", first.caCertificatePath, server]).0 == 0)
        let (_, text) = try openssl(["x509", "-in", server, "-noout", "-text"])
        #expect(text.contains("ASN1 OID: prime256v1"))
        #expect(text.contains("TLS Web Server Authentication"))
        for name in [
            "DNS:localhost", "DNS:assets.test", "IP Address:127.0.0.1", "IP Address:0:0:0:0:0:0:0:1",
            "IP Address:192.0.2.7",
        ] {
            #expect(text.contains(name), "\(name)")
        }
        // At most 825 days: valid in 824 days, expired in 826.
        #expect(try openssl(["x509", "-in", server, "-noout", "-checkend", String(824 * 86_400)]).0 == 0)
        #expect(try openssl(["x509", "-in", server, "-noout", "-checkend", String(826 * 86_400)]).0 != 0)
        var st = stat()
        #expect(stat(repo.tlsPath + "/ca-key.pem", &st) == 0 && st.st_mode & 0o777 == 0o600)

        let second = try LocalTLS.prepare(in: repo, hostnames: ["assets.test", "192.0.2.7"])
        #expect(
            !second.created && second.caFingerprint == first.caFingerprint
                && second.certificatePEM == first.certificatePEM)
        // Fewer names, within what the CA permits (a subdomain of a permitted name), reissue under the same CA;
        // names outside it are refused (LocalTLSConstraintTests).
        let third = try LocalTLS.prepare(in: repo, hostnames: ["cdn.assets.test"])
        #expect(
            third.created && third.caFingerprint == first.caFingerprint && third.certificatePEM != first.certificatePEM)
    }

    @Test func curlTrustsTheServerWithTheLocalCAAndOnlyThen() throws {
        let dir = try TemporaryDirectory("tls-curl")
        defer { dir.remove() }
        let repo = try RepositoryDirectory(path: dir.at("data"))
        let tls = try LocalTLS.prepare(in: repo, hostnames: [])
        let server = try HostingServer(
            repository: try Repository(directory: repo),
            configuration: .init(port: 0, tls: (tls.certificatePEM, tls.privateKeyPEM)))
        defer { server.stop() }
        #expect(server.baseURL.hasPrefix("https://127.0.0.1:"))
        let trusted = try Curl.run(server.baseURL + "v1/keys/root.json", caFile: tls.caCertificatePath)
        #expect(trusted.status == 200 && trusted.text.contains("application/vnd.backlot.root+json"))
        let byName = try Curl.run("https://localhost:\(server.port)/v1/keys/root.json", caFile: tls.caCertificatePath)
        #expect(byName.status == 200)
        let untrusted = try Curl.run(server.baseURL + "v1/keys/root.json")
        #expect(untrusted.exitCode != 0 && untrusted.status == 0)
    }

    @Test func theSigningKeyIsPrivateAndItsPublicKeyPinnable() throws {
        let dir = try TemporaryDirectory("keys")
        defer { dir.remove() }
        let repo = try RepositoryDirectory(path: dir.at("data"))
        var st = stat()
        #expect(stat(repo.signingKeyPath, &st) == 0 && st.st_mode & 0o777 == 0o600)
        let pinned = try PublicKeyFile.read(path: repo.publicKeyPath)
        #expect(pinned == (try repo.signingKey()).publicKey)
        let root = try Array(Data(contentsOf: URL(fileURLWithPath: repo.publicTreePath + "/v1/keys/root.json")))
        let payload = try SignedEnvelope.open(
            root, expecting: KeyList.payloadType, trusting: [pinned], source: "root.json")
        #expect(try KeyList.decode(payload, source: "root.json").keys == [pinned])
        // Reopening keeps the key.
        #expect(try RepositoryDirectory(path: dir.at("data")).signingKey().publicKey == pinned)
    }
}
