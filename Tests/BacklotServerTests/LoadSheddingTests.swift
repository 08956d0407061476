import BacklotBasics
import BacklotHTTPClient
import BacklotProtocol
import BacklotTestSupport
import Foundation
import Testing

@testable import BacklotServer

/// The origin sheds heavy work before it falls over: past its bound, transfers and API calls get
/// 503 with Retry-After at once, catalogs still answer and tell devices to check later, and
/// /metrics shows it.
@Suite(.serialized) struct LoadSheddingTests {
    @Test func pastTheBoundHeavyRequestsAreShedAndCatalogsAskDevicesToWait() throws {
        let f = try ClientFixture()
        try f.publish(channel: .production)
        let server = try HostingServer(
            repository: f.repository, configuration: .init(port: 0),
            loadShedding: LoadShedding(heavyRequests: 1, retryAfter: 3, checkAfter: 120, calmSeconds: 5))
        defer { server.stop(grace: 0) }
        let http = HTTPClient()
        let base = server.baseURL
        let catalog = base + PublishedTreeLayout.catalog(app: f.app, channel: .production).path
        let pack = base + "v1/packs/" + URL(fileURLWithPath: try f.archivePath(channel: .production)).lastPathComponent
        func metric(_ name: String) throws -> String? {
            let text = String(decoding: try http.send("GET", base + "metrics").body, as: UTF8.self)
            return text.split(separator: "\n").first { $0.hasPrefix(name + " ") }.map {
                String($0.dropFirst(name.count + 1))
            }
        }

        // Calm: the configured hint, and a transfer answered.
        let calm = try http.send("GET", catalog)
        #expect(calm.status == 200 && calm.headers["backlot-check-after"] == "120")
        #expect(try http.send("GET", pack).status == 200)
        #expect(try metric("backlot_heavy_requests_limit") == "1")

        // One API call held open (half its body sent, the rest never) takes the only slot.
        let token = try String(contentsOfFile: f.repository.adminTokenPath, encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        var held: SlowHTTPConnection? = try SlowHTTPConnection(port: server.port)
        held?.sendHead("POST", "/api/apps", token: token, length: 100, type: "application/json")
        held?.send(String(repeating: " ", count: 50))
        try Wait.until("the held call counts", timeout: .seconds(10)) {
            try metric("backlot_heavy_requests_in_flight") == "1"
        }

        // A request refused before any handler sees it (an encoded slash) gives no slot back.
        #expect(try http.send("GET", base + "api/a%2Fb").status == 400)
        #expect(try metric("backlot_heavy_requests_in_flight") == "1")

        let shedTransfer = try http.send("GET", pack, headers: ["Range": "bytes=0-99"])
        #expect(shedTransfer.status == 503 && shedTransfer.headers["retry-after"] == "3")
        let shedCall = try http.send("GET", base + "api/whoami")
        #expect(shedCall.status == 503 && String(decoding: shedCall.body, as: UTF8.self).contains("busy"))
        // Catalogs are never shed, and now ask for the longer wait.
        let busy = try http.send("GET", catalog)
        #expect(busy.status == 200 && busy.headers["backlot-check-after"] == "900", "\(busy.headers)")
        #expect(try metric("backlot_requests_shed_total") == "2")

        // The held call ends (the client leaves): its slot is given back, transfers are answered again.
        held = nil  // closed
        try Wait.until("the slot is given back", timeout: .seconds(10)) {
            try metric("backlot_heavy_requests_in_flight") == "0"
        }
        #expect(try http.send("GET", pack, headers: ["Range": "bytes=0-99"]).status == 206)
        // Five seconds after the last request shed, the server is calm again.
        try Wait.until("calm again", timeout: .seconds(30)) {
            try http.send("GET", catalog).headers["backlot-check-after"] == "120"
        }
    }

    @Test func withoutABoundNothingIsShed() throws {
        let shedder = LoadShedder(LoadShedding(heavyRequests: 0))
        for n in 1...1000 {
            #expect(shedder.admit(.init(method: "GET", path: "/api/apps", number: UInt64(n))) == nil)
        }
        #expect(shedder.inFlight == 0 && shedder.checkAfter() == nil)
    }

    @Test(arguments: [
        ("/api/apps", true), ("/v1/packs/\(String(repeating: "a", count: 64)).pack", true),
        ("/v1/deltas/\(String(repeating: "b", count: 64)).delta", true),
        ("/v1/apps/com.example.game/production/catalog.json", false), ("/v1/keys/root.json", false),
        ("/metrics", false), ("/", false),
    ])
    func heavyIsTransfersAndCalls(_ path: String, _ heavy: Bool) {
        #expect(LoadShedder.isHeavy(.init(method: "GET", path: path)) == heavy)
    }
}
