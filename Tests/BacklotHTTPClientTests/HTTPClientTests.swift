import BacklotBasics
import BacklotCrypto
import BacklotHTTPClient
import BacklotHTTPServer
import BacklotTestSupport
import Foundation
import Synchronization
import Testing

/// The libcurl client every download, upload and API call goes through, against a real
/// libmicrohttpd server: bounded bodies, resumed downloads, uploads from a file offset, and
/// failures that say what they are.
@Suite(.serialized) struct HTTPClientTests {
    static let payload: [UInt8] = {
        var g = SeededGenerator(seed: 7)
        return g.bytes(300_000)
    }()

    /// A server that answers /payload (with Range), /echo (the request body back) and /big.
    static func server(tls: (certificate: String, key: String)? = nil) throws -> HTTPServer {
        try HTTPServer(configuration: .init(port: 0, tls: tls)) { request in
            switch request.path {
            case "/payload":
                if let range = request.header("Range"), range.hasPrefix("bytes="),
                    let start = Int(range.dropFirst(6).dropLast()), start < payload.count
                {
                    return .respond(
                        HTTPResponse(
                            status: 206,
                            headers: [("Content-Range", "bytes \(start)-\(payload.count - 1)/\(payload.count)")],
                            body: .bytes(Array(payload[start...]))))
                }
                return .respond(HTTPResponse(status: 200, body: .bytes(payload)))
            case "/echo":
                return .buffer(limit: 1 << 20) { body in HTTPResponse(status: 200, body: .bytes(body)) }
            default:
                return .respond(HTTPResponse.error(404, code: .notFound, "no \(request.path)"))
            }
        }
    }

    @Test func bodiesAreBoundedByWhatWasDeclared() throws {
        let server = try Self.server()
        defer { server.stop(grace: 0) }
        let url = "http://127.0.0.1:\(server.port)"
        #expect(try HTTPClient().send("GET", url + "/payload").body == Self.payload)
        // A body past the declared size is stopped there and said so; past the limit it is an error.
        let declared = try HTTPClient().send("GET", url + "/payload", expectedBodySize: 1000)
        #expect(declared.exceededExpectedSize && declared.body.count <= 1000)
        #expect(throws: BacklotError.self) { try HTTPClient(maximumBodySize: 1000).send("GET", url + "/payload") }
        #expect(try HTTPClient().send("GET", url + "/nothing").status == 404)
    }

    @Test func aBodyIsWrittenIntoTheMemoryHandedBack() throws {
        let server = try Self.server()
        defer { server.stop(grace: 0) }
        let url = "http://127.0.0.1:\(server.port)"
        let client = HTTPClient()
        var spare: [UInt8] = []
        var first = try client.send(
            "GET", url + "/payload", expectedBodySize: Self.payload.count, reusing: &spare
        ).body
        #expect(first == Self.payload && spare.isEmpty)
        let memory = first.withUnsafeBufferPointer { UInt(bitPattern: $0.baseAddress) }
        spare = first
        first = []  // the caller gives its reference up: the buffer is the spare's alone
        for start in [1000, 250_000] {
            let body = try client.send(
                "GET", url + "/payload", headers: ["Range": "bytes=\(start)-"],
                expectedBodySize: Self.payload.count - start, reusing: &spare
            ).body
            #expect(body == Array(Self.payload[start...]) && spare.isEmpty)
            #expect(body.withUnsafeBufferPointer { UInt(bitPattern: $0.baseAddress) } == memory, "the same memory")
            spare = body
        }
        // Memory still shared with the caller is copied, never written under it.
        let kept = spare
        let again = try client.send("GET", url + "/payload", expectedBodySize: Self.payload.count, reusing: &spare)
        #expect(again.body == Self.payload && kept == Array(Self.payload[250_000...]))
    }

    @Test func aDownloadResumesFromItsOffset() throws {
        let server = try Self.server()
        defer { server.stop(grace: 0) }
        let dir = try TemporaryDirectory("http-download")
        defer { dir.remove() }
        try Data(Self.payload[..<100_000]).write(to: URL(fileURLWithPath: dir.at("part")))
        let seen = Mutex<UInt64>(0)
        let r = try HTTPClient().download(
            "http://127.0.0.1:\(server.port)/payload", to: dir.at("part"), from: 100_000,
            limit: UInt64(Self.payload.count),
            progress: { done, _ in seen.withLock { $0 = max($0, done) } })
        #expect(r.status == 206 && r.size == UInt64(Self.payload.count))
        #expect(Array(try Data(contentsOf: URL(fileURLWithPath: dir.at("part")))) == Self.payload)
        #expect(seen.withLock { $0 } > 0)
    }

    /// Downloads into files from threads of their own at once, with one client: each transfer's
    /// state (`FileSink`) is its own, reached only from its own transfer's callbacks (the proof
    /// of `FileSink` and `Transfer`), so every file holds exactly its bytes.
    @Test func downloadsFromThreadsAtOnceEachWriteTheirOwnFile() throws {
        let server = try Self.server()
        defer { server.stop(grace: 0) }
        let dir = try TemporaryDirectory("http-download-threads")
        defer { dir.remove() }
        let client = HTTPClient()
        let url = "http://127.0.0.1:\(server.port)/payload"
        let failures = Mutex<[String]>([])
        onThreadsOfTheirOwn(6) { t in
            for i in 0..<4 {
                let path = dir.at("t\(t)-\(i)")
                // Half resume from an offset (a Range request), half start from nothing.
                let offset = (t + i) % 2 == 0 ? 0 : 1000 * (t + 1)
                do {
                    try Data(Self.payload[..<offset]).write(to: URL(fileURLWithPath: path))
                    let r = try client.download(
                        url, to: path, from: UInt64(offset), limit: UInt64(Self.payload.count))
                    let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
                    if r.size != UInt64(Self.payload.count) || bytes != Self.payload {
                        failures.withLock { $0.append("\(path): status \(r.status), \(bytes.count) bytes") }
                    }
                    // And a request whose body is kept in memory, on the same thread.
                    let sent = try client.send(
                        "POST", "http://127.0.0.1:\(server.port)/echo", body: .bytes(Array(path.utf8)))
                    if sent.text != path { failures.withLock { $0.append("\(path): echo \(sent.text)") } }
                } catch {
                    failures.withLock { $0.append("\(path): \(error)") }
                }
            }
        }
        #expect(failures.withLock { $0 } == [])
    }

    @Test func anUploadSendsTheFileFromItsOffset() throws {
        let server = try Self.server()
        defer { server.stop(grace: 0) }
        let dir = try TemporaryDirectory("http-upload")
        defer { dir.remove() }
        try Data(Self.payload).write(to: URL(fileURLWithPath: dir.at("f")))
        let r = try HTTPClient().send(
            "PUT", "http://127.0.0.1:\(server.port)/echo", body: .file(path: dir.at("f"), offset: 1000, length: 5000))
        #expect(r.status == 200 && r.body == Array(Self.payload[1000..<6000]))
        #expect(throws: BacklotError.self) {
            try HTTPClient().send(
                "PUT", "http://127.0.0.1:\(server.port)/echo",
                body: .file(path: dir.at("missing"), offset: 0, length: 1))
        }
    }

    @Test func failuresSayWhatTheyAre() throws {
        // Nothing listens: a network error naming the URL.
        var closed: ListeningSocket? = try ListeningSocket(host: "127.0.0.1", port: 0)
        let port = closed!.port
        closed = nil  // closes the socket: the port is free and nothing listens
        do {
            _ = try HTTPClient().send("GET", "http://127.0.0.1:\(port)/x")
            Issue.record("a closed port answered")
        } catch let e as BacklotError {
            #expect(e.code == .io && e.message.contains("127.0.0.1:\(port)"), "\(e)")
        }
        // A certificate from a CA the client was not given: code tls, the certificate's problem.
        let ca = try LocalCertificateAuthority.create(commonName: "HTTPClientTests CA")
        let issued = try ca.issueServerCertificate(dnsNames: ["localhost"], ipAddresses: ["127.0.0.1"])
        let server = try Self.server(tls: (issued.certificatePEM, issued.privateKeyPEM))
        defer { server.stop(grace: 0) }
        do {
            _ = try HTTPClient().send("GET", "https://127.0.0.1:\(server.port)/payload")
            Issue.record("an unknown CA was trusted")
        } catch let e as BacklotError {
            #expect(e.code == .tls && e.message.contains("certificate"), "\(e)")
        }
        let dir = try TemporaryDirectory("http-ca")
        defer { dir.remove() }
        try dir.write("ca.pem", ca.certificatePEM)
        #expect(
            try HTTPClient(caFile: dir.at("ca.pem")).send("GET", "https://127.0.0.1:\(server.port)/payload").body
                == Self.payload)
    }
}
