import BacklotBasics
import BacklotCrypto
import BacklotHTTPClient
import BacklotHTTPServer
import BacklotTestSupport
import Dispatch
import Foundation
import Synchronization
import Testing

/// A client with a connection cache keeps its connections between requests without a body, over
/// plain HTTP and TLS, from several threads at once (each request on a connection of its own); a
/// connection the server closed meanwhile is replaced; uploads never use it.
@Suite(.serialized) struct ConnectionCacheTests {
    static func server(
        tls: (certificate: String, key: String)? = nil, idleSeconds: Int = 30
    ) throws -> HTTPServer {
        try HTTPServer(configuration: .init(port: 0, tls: tls, connectionTimeout: idleSeconds)) { request in
            if request.path == "/echo" {
                return .buffer(limit: 1 << 20) { body in HTTPResponse(status: 200, body: .bytes(body)) }
            }
            return .respond(HTTPResponse(status: 200, body: .bytes(Array(request.path.utf8))))
        }
    }

    static func cachedClient(caFile: String? = nil) throws -> HTTPClient {
        var client = HTTPClient(caFile: caFile)
        client.connectionCache = try HTTPClient.ConnectionCache()
        return client
    }

    @Test(arguments: [false, true])
    func requestsOneAfterAnotherUseOneConnection(_ tls: Bool) throws {
        let dir = try TemporaryDirectory("connection-cache")
        defer { dir.remove() }
        var tlsFiles: (certificate: String, key: String)?
        var caFile: String?
        if tls {
            let ca = try LocalCertificateAuthority.create(commonName: "ConnectionCacheTests CA")
            let issued = try ca.issueServerCertificate(dnsNames: ["localhost"], ipAddresses: ["127.0.0.1"])
            tlsFiles = (issued.certificatePEM, issued.privateKeyPEM)
            try dir.write("ca.pem", Array(ca.certificatePEM.utf8))
            caFile = dir.at("ca.pem")
        }
        let server = try Self.server(tls: tlsFiles)
        defer { server.stop(grace: 0) }
        let base = "\(tls ? "https" : "http")://127.0.0.1:\(server.port)"
        let client = try Self.cachedClient(caFile: caFile)
        var reused: [Bool] = []
        for i in 0..<8 {
            let r = try client.send("GET", base + "/r\(i)")
            #expect(r.text == "/r\(i)")
            reused.append(r.reusedConnection)
        }
        #expect(reused == [false] + Array(repeating: true, count: 7))
        #expect(server.openConnections == 1)

        // Without a cache each request makes its connection and closes it when it ends.
        for i in 0..<3 { #expect(try !HTTPClient(caFile: caFile).send("GET", base + "/n\(i)").reusedConnection) }
    }

    @Test func threadsAtOnceEachTakeAConnectionOfTheirOwn() throws {
        let server = try Self.server()
        defer { server.stop(grace: 0) }
        let client = try Self.cachedClient()
        let failed = Mutex<[String]>([])
        let made = Mutex(0)
        // Four threads of their own (concurrentPerform would run two at once on two cores).
        let group = DispatchGroup()
        for t in 0..<4 {
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                for i in 0..<25 {
                    let path = "/t\(t)-\(i)"
                    let r = try? client.send("GET", "http://127.0.0.1:\(server.port)" + path)
                    if r?.text != path { failed.withLock { $0.append("\(path): \(r?.text ?? "failed")") } }
                    if r?.reusedConnection == false { made.withLock { $0 += 1 } }
                }
            }
        }
        group.wait()
        #expect(failed.withLock { $0 }.isEmpty)
        // A connection per thread at most: 100 requests, four connections made.
        #expect(made.withLock { $0 } <= 4)
        #expect(server.openConnections <= 4)
    }

    /// What one request set (HEAD's no-body, a body stopped at its declared size) never reaches
    /// the next request on the same kept handle.
    @Test func aKeptConnectionCarriesNothingOfTheRequestBefore() throws {
        let server = try Self.server()
        defer { server.stop(grace: 0) }
        let client = try Self.cachedClient()
        let url = "http://127.0.0.1:\(server.port)/a-path-of-some-length"
        let head = try client.send("HEAD", url)
        #expect(head.status == 200 && head.body.isEmpty)
        let get = try client.send("GET", url)
        #expect(get.text == "/a-path-of-some-length" && get.reusedConnection)
        let cut = try client.send("GET", url, expectedBodySize: 4)
        #expect(cut.exceededExpectedSize)
        let whole = try client.send("GET", url)
        #expect(whole.text == "/a-path-of-some-length" && !whole.exceededExpectedSize)
    }

    @Test func aConnectionTheServerClosedIsReplaced() throws {
        let server = try Self.server(idleSeconds: 1)
        defer { server.stop(grace: 0) }
        let client = try Self.cachedClient()
        let url = "http://127.0.0.1:\(server.port)/again"
        #expect(try client.send("GET", url).status == 200)
        #expect(server.openConnections == 1)
        // The server closes the idle connection after a second; the next request still succeeds.
        #expect(Wait.holds(within: .seconds(10)) { server.openConnections == 0 })
        let again = try client.send("GET", url)
        #expect(again.text == "/again" && !again.reusedConnection)
    }

    @Test func uploadsDoNotUseTheCache() throws {
        let server = try Self.server()
        defer { server.stop(grace: 0) }
        let client = try Self.cachedClient()
        let url = "http://127.0.0.1:\(server.port)/echo"
        for i in 0..<3 {
            let r = try client.send("POST", url, body: .bytes(Array("body \(i)".utf8)))
            #expect(r.text == "body \(i)" && !r.reusedConnection)
        }
    }
}
