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
    @Test func metricsMoveToTheirListenerAndNeedTheirToken() throws {
        let dir = try TemporaryDirectory("serve-metrics")
        defer { dir.remove() }
        let tokenFile = dir.at("metrics.token")
        try Data("metrics-secret\n".utf8).write(to: URL(fileURLWithPath: tokenFile))
        chmod(tokenFile, 0o600)
        // The metrics listener binds its port itself: another port is tried when it finds one taken.
        let (port, server) = try FreePort.starting("backlot serve --metrics-listen") { port in
            do {
                return (
                    port,
                    try ServerProcessTests.Server(
                        data: dir.at("data"),
                        arguments: [
                            "--tls", "off", "--metrics-token-file", tokenFile, "--metrics-listen", "127.0.0.1:\(port)",
                        ])
                )
            } catch  where FreePort.saysAddressInUse("\(error)") {
                throw FreePort.InUse(port: port, detail: "\(error)")
            }
        }
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
