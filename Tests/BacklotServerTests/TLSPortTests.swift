import BacklotBasics
import BacklotHTTPServer
import BacklotRepository
import BacklotTestSupport
import Foundation
import Synchronization
import Testing

@testable import BacklotServer

#if canImport(Glibc)
import Glibc
#endif

/// The HTTPS port: plain HTTP gets a 400 that says to use https (not an empty reply), TLS keeps
/// working beside it, and a silent connection blocks nobody.
@Suite(.serialized) struct TLSPortTests {
    @Test func plainHTTPSentToTheHTTPSPortGetsA400SayingSo() throws {
        let dir = try TemporaryDirectory("tls-port")
        defer { dir.remove() }
        let repo = try RepositoryDirectory(path: dir.at("data"))
        let tls = try LocalTLS.prepare(in: repo, hostnames: [])
        let lines = Mutex<[String]>([])
        let server = try HostingServer(
            repository: try Repository(directory: repo),
            configuration: .init(port: 0, tls: (tls.certificatePEM, tls.privateKeyPEM))
        ) { line in
            lines.withLock { $0.append(line) }
        }
        defer { server.stop() }
        // A connection that sends nothing is being looked at meanwhile.
        let silent = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(silent) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = server.port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        #expect(
            withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(silent, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            } == 0)

        for path in ["v1/keys/root.json", "api/apps"] {
            let plain = try Curl.run("http://127.0.0.1:\(server.port)/" + path)
            #expect(
                plain.status == 400 && plain.text.contains("The plain HTTP request was sent to HTTPS port")
                    && plain.text.contains("https://127.0.0.1:\(server.port)/"),
                "\(plain.status) \(plain.text) curl exit \(plain.exitCode) port \(server.port)")
            #expect(plain.headers["connection"] == "close" && plain.headers["content-type"] == "application/json")
            let secure = try Curl.run(
                "https://127.0.0.1:\(server.port)/v1/keys/root.json", caFile: tls.caCertificatePath)
            #expect(secure.status == 200 && secure.text.contains("application/vnd.backlot.root+json"))
        }
        // A POST with a body is answered too (its body is drained, not reset).
        try dir.write("body.json", [UInt8](repeating: UInt8(ascii: "x"), count: 200_000))
        let post = try Curl.run(
            "http://127.0.0.1:\(server.port)/api/apps", method: "POST",
            extra: ["--data-binary", "@" + dir.at("body.json")])
        #expect(post.status == 400 && post.text.contains("HTTPS port"), "\(post.status) \(post.exitCode)")
        // Many at once, plain and TLS mixed.
        let failures = Atomic<Int>(0)
        DispatchQueue.concurrentPerform(iterations: 8) { i in
            let r =
                i % 2 == 0
                ? try? Curl.run("http://127.0.0.1:\(server.port)/v1/keys/root.json")
                : try? Curl.run("https://127.0.0.1:\(server.port)/v1/keys/root.json", caFile: tls.caCertificatePath)
            if r?.status != (i % 2 == 0 ? 400 : 200) { failures.wrappingAdd(1, ordering: .relaxed) }
        }
        #expect(failures.load(ordering: .relaxed) == 0)
        let metrics = try Curl.run("https://127.0.0.1:\(server.port)/metrics", caFile: tls.caCertificatePath)
        #expect(metrics.text.contains("backlot_http_requests_total{route=\"other\",status=\"400\"}"), "\(metrics.text)")
        #expect(
            lines.withLock { $0.contains { $0.contains("\"status\":400") && $0.contains("\"path\":\"/api/apps\"") } })
    }

    /// Stopping the server while TLS connections keep arriving: the gate hands each to the daemon
    /// until the daemon is closing, then closes them itself (the proof of `DaemonBox`); every
    /// request ends — answered, or refused — and none is left hanging.
    @Test func stoppingWhileTLSConnectionsArriveLeavesNoneHanging() throws {
        let dir = try TemporaryDirectory("tls-stop")
        defer { dir.remove() }
        let repo = try RepositoryDirectory(path: dir.at("data"))
        let tls = try LocalTLS.prepare(in: repo, hostnames: [])
        let server = try HostingServer(
            repository: try Repository(directory: repo),
            configuration: .init(port: 0, tls: (tls.certificatePEM, tls.privateKeyPEM)))
        let url = "https://127.0.0.1:\(server.port)/v1/keys/root.json"
        let answered = Atomic<Int>(0)
        let refused = Atomic<Int>(0)
        let hung = Atomic<Int>(0)
        let stopped = Atomic<Bool>(false)
        let group = DispatchGroup()
        for _ in 0..<4 {
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                // Until the server has stopped, and one request more.
                var last = false
                while !last {
                    last = stopped.load(ordering: .acquiring)
                    let r = try? Curl.run(url, caFile: tls.caCertificatePath)
                    switch r?.status {
                    case 200: answered.wrappingAdd(1, ordering: .relaxed)
                    case _ where r?.exitCode == 28: hung.wrappingAdd(1, ordering: .relaxed)
                    default: refused.wrappingAdd(1, ordering: .relaxed)
                    }
                }
            }
        }
        for _ in 0..<6_000 where answered.load(ordering: .relaxed) < 8 { usleep(10_000) }
        server.stop(grace: 0)
        stopped.store(true, ordering: .releasing)
        group.wait()
        #expect(answered.load(ordering: .relaxed) >= 8, "requests were answered before the stop")
        #expect(refused.load(ordering: .relaxed) >= 4, "each thread's request after the stop was refused")
        #expect(hung.load(ordering: .relaxed) == 0, "no request waited for curl's 20 s limit")
    }

    /// A port that cannot be bound fails before anything is started, with a clear error.
    @Test func aPortInUseIsAClearError() throws {
        let first = try ListeningSocket(host: "127.0.0.1", port: 0)
        #expect(first.port != 0)
        #expect { try ListeningSocket(host: "127.0.0.1", port: first.port) } throws: { error in
            (error as? BacklotError)?.code == .io && "\(error)".contains("port \(first.port)")
        }
        #expect(throws: BacklotError.self) { try ListeningSocket(host: "localhost", port: 0) }
    }
}
