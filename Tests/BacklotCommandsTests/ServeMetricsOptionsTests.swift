import BacklotBasics
import BacklotHTTPClient
import BacklotTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `backlot serve --metrics-token-file FILE --metrics-listen HOST:PORT` as a real process:
/// `/metrics` leaves the main port, needs its token on its own, and bad values stop the start.
@Suite(.serialized) struct ServeMetricsOptionsTests {
    /// A port nothing listens on now (bound to 0, read, closed).
    func freePort() throws -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        try #require(fd >= 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        try #require(bound)
        return UInt16(bigEndian: address.sin_port)
    }

    @Test func metricsMoveToTheirListenerAndNeedTheirToken() throws {
        let dir = try TemporaryDirectory("serve-metrics")
        defer { dir.remove() }
        let tokenFile = dir.at("metrics.token")
        try Data("metrics-secret\n".utf8).write(to: URL(fileURLWithPath: tokenFile))
        chmod(tokenFile, 0o600)
        let port = try freePort()
        let server = try ServerProcessTests.Server(
            data: dir.at("data"),
            arguments: ["--tls", "off", "--metrics-token-file", tokenFile, "--metrics-listen", "127.0.0.1:\(port)"])
        defer { _ = server.terminate() }
        let client = HTTPClient()
        #expect(try client.send("GET", server.baseURL + "metrics").status == 404, "not on the main port")
        #expect(try client.send("GET", server.baseURL + "v1/keys/root.json").status == 200)
        let metrics = "http://127.0.0.1:\(port)/metrics"
        #expect(try client.send("GET", metrics).status == 401)
        let scraped = try client.send("GET", metrics, headers: ["Authorization": "Bearer metrics-secret"])
        #expect(scraped.status == 200 && scraped.text.contains("backlot_build_info{version=\"0.1.0\"} 1"))
        #expect(scraped.text.contains("# TYPE backlot_request_duration_seconds histogram"))
    }

    @Test func aTokenFileEveryoneMayReadOrABadAddressStopsTheStart() throws {
        let dir = try TemporaryDirectory("serve-metrics-bad")
        defer { dir.remove() }
        let tokenFile = dir.at("metrics.token")
        try Data("metrics-secret\n".utf8).write(to: URL(fileURLWithPath: tokenFile))
        chmod(tokenFile, 0o644)
        func start(_ arguments: [String]) throws -> (Int32, String) {
            let outcome = try ChildProcess.run(
                executable: ProcessTests.binary,
                arguments: ["serve", "--data", dir.at("data"), "--port", "0", "--tls", "off", "--quiet"] + arguments,
                environment: [:], until: .now + .seconds(60))
            return (outcome.exitStatus ?? -1, String(decoding: outcome.output, as: UTF8.self))
        }
        let open = try start(["--metrics-token-file", tokenFile])
        #expect(open.0 == 2 && open.1.contains("readable by everyone"), "\(open)")
        let address = try start(["--metrics-listen", "nowhere"])
        #expect(address.0 == 2 && address.1.contains("HOST:PORT"), "\(address)")
        try Data("two words\n".utf8).write(to: URL(fileURLWithPath: tokenFile))
        chmod(tokenFile, 0o600)
        let words = try start(["--metrics-token-file", tokenFile])
        #expect(words.0 == 2 && words.1.contains("one token"), "\(words)")
    }
}
