import BacklotBasics
import BacklotCrypto
import BacklotHTTPClient
import BacklotInfoPlist
import BacklotPeerCache
import BacklotProtocol
import BacklotTestSupport
import Foundation
import Synchronization
import Testing

@testable import BacklotClient

/// The LAN peer cache on loopback, with real components: a server publishing a pack, a device
/// that installed it serving its chunks (``PeerCacheServer``), and other devices installing with
/// that peer (docs/peer-cache.md). The namespace test (scripts/peer-cache-test) runs the same over
/// a real LAN with mDNS, a hostile peer and the origin going down.
@Suite(.serialized) struct PeerCacheTests {
    /// A device ("A") with Levels installed from the origin, and its peer cache on 127.0.0.1.
    func servingDevice(
        _ f: ClientFixture, rate: UInt64 = 1 << 30, isAllowed: @escaping @Sendable () -> Bool = { true }
    ) async throws -> (source: String, cache: PeerCacheServer) {
        let (source, _) = try f.publish(seed: 32)
        _ = try await f.manager(container: "A").fetch(packWithID: "Levels")
        var settings = PeerCacheSettings()
        settings.listen = ["127.0.0.1"]
        settings.port = 0
        settings.rate = rate
        let cache = try PeerCacheServer(containerPath: f.dir.at("A"), settings: settings, isAllowed: isAllowed)
        return (source, cache)
    }

    func manager(_ f: ClientFixture, _ container: String, peers: [String]) throws -> AssetPackManager {
        var configuration = AssetPackManager.Configuration(
            containerPath: f.dir.at(container), catalogURL: f.catalogURL(), app: f.app, channel: .internal,
            trustedKeys: [f.pinned], platform: .linux)
        configuration.sendsReports = false
        configuration.peers = PeerDirectory(staticPeers: peers.map { URL(string: $0)! })
        // The peer runs in this loaded test process: a late answer here would ban it for the install.
        configuration.peers.answerDeadline = .seconds(30)
        return try AssetPackManager(configuration: configuration)
    }

    func installedFolder(_ f: ClientFixture, _ container: String) throws -> String {
        let c = try ClientContainer(path: f.dir.at(container))
        let release = try #require(try c.installed("Levels"))
        return c.releaseFolder("Levels", digest: release.digest)
    }

    @Test func aDeviceInstallsFromItsNeighbourAndTheOriginSendsOnlyTheIndex() async throws {
        let f = try ClientFixture()
        let (source, cache) = try await servingDevice(f)
        defer { cache.stop(grace: 0) }
        let b = try manager(f, "B", peers: ["http://127.0.0.1:\(cache.port)"])
        let report = try await b.fetch(packWithID: "Levels")
        let installSize = try #require(try ClientContainer(path: f.dir.at("A")).installed("Levels"))
        #expect(report.peerChunks > 0 && report.downloadedChunks == 0 && report.bannedPeers.isEmpty)
        // From the origin: the archive's header and index only.
        #expect(report.downloadedBytes < 64 << 10, "origin bytes: \(report.downloadedBytes)")
        #expect(report.peerBytes == UInt64(cache.statistics.bytesSent) && cache.statistics.questions == 1)
        #expect(installSize.version == report.version)
        #expect(try sameFiles(source, try installedFolder(f, "B")))
        #expect(b.lastFetchReport(forPackWithID: "Levels") == report)
    }

    @Test func aDamagedFileOnThePeerIsNeverServedAndItsChunksComeFromTheOrigin() async throws {
        let f = try ClientFixture()
        let (source, cache) = try await servingDevice(f)
        defer { cache.stop(grace: 0) }
        // Damage A's installed files (as a user or a disk might): the chunks holding byte 5 of
        // each fail their re-hash.
        let folder = try installedFolder(f, "A")
        for case let p as String in FileManager.default.enumerator(atPath: folder)!
        where ((try? FileSystem.status(folder + "/" + p)) ?? nil).map({ $0.kind == .regular && $0.size > 5 }) ?? false {
            let fd = open(folder + "/" + p, O_RDWR)
            #expect(fd >= 0)
            var byte: UInt8 = 0
            #expect(pread(fd, &byte, 1, 5) == 1)
            byte ^= 0xFF
            #expect(pwrite(fd, &byte, 1, 5) == 1)
            close(fd)
        }

        let report = try await manager(f, "B", peers: ["http://127.0.0.1:\(cache.port)"]).fetch(packWithID: "Levels")
        #expect(try sameFiles(source, try installedFolder(f, "B")))
        #expect(report.downloadedChunks >= 1 && report.peerChunks > 0, "\(report)")
        // A peer whose chunks fail their re-hash says it has not got them (404); after three such
        // chunks it is not asked again in this install.
        #expect(cache.statistics.notHeld >= 1)
        #expect(report.bannedPeers.values.allSatisfy { $0.contains("did not have (3 times)") }, "\(report.bannedPeers)")
    }

    @Test func onBatteryOrOverItsBudgetThePeerRefusesAndTheOriginGivesEverything() async throws {
        let f = try ClientFixture()
        let (source, paused) = try await servingDevice(f, isAllowed: { false })
        let report = try await manager(f, "B", peers: ["http://127.0.0.1:\(paused.port)"]).fetch(
            packWithID: "Levels")
        paused.stop(grace: 0)
        #expect(report.peerBytes == 0 && report.downloadedChunks > 0 && report.bannedPeers.isEmpty)
        #expect(paused.statistics.refused >= 1 && paused.statistics.chunksSent == 0)
        #expect(try sameFiles(source, try installedFolder(f, "B")))

        // A budget of 64 KiB a second: the first chunks go, then 503 with Retry-After, the rest from the origin.
        var settings = PeerCacheSettings()
        settings.listen = ["127.0.0.1"]
        settings.port = 0
        settings.rate = 64 << 10
        let slow = try PeerCacheServer(containerPath: f.dir.at("A"), settings: settings)
        defer { slow.stop(grace: 0) }
        let c = try await manager(f, "C", peers: ["http://127.0.0.1:\(slow.port)"]).fetch(packWithID: "Levels")
        #expect(try sameFiles(source, try installedFolder(f, "C")))
        #expect(slow.statistics.refused >= 1 && c.downloadedChunks >= 1, "\(slow.statistics) \(c)")
    }

    /// A peer that claims every chunk and then answers every request for one "busy" (503, no
    /// Retry-After) is asked nothing more after a few such answers: not once per chunk, each of
    /// which could cost the 2 s a peer has to answer. The origin gives everything.
    @Test func aPeerAlwaysBusyIsSetAsideAfterAFewAnswers() async throws {
        let f = try ClientFixture()
        let (source, _) = try f.publish(seed: 32)
        let chunkRequests = Atomic<Int>(0)
        let busy = try ScriptedHTTPServer { request in
            if request.method == "POST" {
                let asked = (Int(request.headers["content-length"] ?? "0") ?? 0) / SHA256Digest.byteCount
                return .init(status: 200, body: [UInt8](repeating: 0xFF, count: (asked + 7) / 8))
            }
            chunkRequests.add(1, ordering: .relaxed)
            return .init(status: 503)
        }
        defer { busy.stop() }
        let report = try await manager(f, "B", peers: ["http://127.0.0.1:\(busy.port)"]).fetch(packWithID: "Levels")
        #expect(try sameFiles(source, try installedFolder(f, "B")))
        #expect(report.peerBytes == 0 && report.downloadedChunks > 2 * PeerPassState.maximumBusyPastWaits, "\(report)")
        #expect(report.bannedPeers.values.contains { $0.contains("answered busy") }, "\(report.bannedPeers)")
        // At most the answers that set it aside, and the requests already in flight then (8 threads).
        let asked = chunkRequests.load(ordering: .relaxed)
        #expect(
            asked >= PeerPassState.maximumBusyPastWaits && asked <= PeerPassState.maximumBusyPastWaits + 8, "\(asked)")
    }

    @Test func thePeerAnswersOnlyItsTwoRequests() throws {
        let f = try ClientFixture()
        _ = try f.publish(seed: 32)
        _ = try ClientContainer(path: f.dir.at("A"))
        var settings = PeerCacheSettings()
        settings.listen = ["127.0.0.1"]
        settings.port = 0
        let cache = try PeerCacheServer(containerPath: f.dir.at("A"), settings: settings)
        defer { cache.stop(grace: 0) }
        let http = HTTPClient()
        let base = "http://127.0.0.1:\(cache.port)"
        let id = SHA256.hash(Array("x".utf8))
        #expect(try http.send("GET", base + PeerCacheLayout.chunkPath(id)).status == 404)
        #expect(try http.send("GET", base + PeerCacheLayout.chunkPrefix + id.hex.uppercased()).status == 404)
        #expect(try http.send("GET", base + PeerCacheLayout.chunkPrefix + id.hex + "/x").status == 404)
        #expect(try http.send("PUT", base + PeerCacheLayout.chunkPath(id)).status == 405)
        #expect(try http.send("GET", base + PeerCacheLayout.havePath).status == 405)
        #expect(try http.send("GET", base + "/v1/apps/com.example.game/internal/catalog.json").status == 404)
        #expect(try http.send("POST", base + PeerCacheLayout.havePath, body: .bytes([1, 2, 3])).status == 400)
        let answer = try http.send(
            "POST", base + PeerCacheLayout.havePath, body: .bytes(PeerCacheLayout.haveQuery([id, id, id])))
        #expect(answer.status == 200 && answer.body == [0])
    }

    @Test func theWireSpellsChunkIDsExactlyAndAnswersOneBitEach() {
        let id = SHA256.hash(Array("chunk".utf8))
        #expect(PeerCacheLayout.chunkID(path: PeerCacheLayout.chunkPath(id)) == id)
        #expect(PeerCacheLayout.chunkID(path: PeerCacheLayout.chunkPrefix + String(id.hex.dropLast())) == nil)
        #expect(PeerCacheLayout.chunkID(path: PeerCacheLayout.chunkPrefix + id.hex.uppercased()) == nil)
        #expect(PeerCacheLayout.chunkID(path: "/backlot-peer/v1/chunks/../" + id.hex) == nil)
        let ids = (0..<11).map { SHA256.hash([UInt8($0)]) }
        #expect(PeerCacheLayout.haveIDs(PeerCacheLayout.haveQuery(ids)) == ids)
        #expect(PeerCacheLayout.haveIDs([]) == nil && PeerCacheLayout.haveIDs(Array(repeating: 0, count: 33)) == nil)
        let bits = PeerCacheLayout.haveAnswer(count: 11) { $0 % 3 == 0 }
        #expect(bits == [0b1001_0010, 0b0100_0000])
        #expect((0..<11).map { PeerCacheLayout.answerHolds(bits, $0) } == (0..<11).map { $0 % 3 == 0 })
        #expect(!PeerCacheLayout.answerHolds(bits, 400))
    }

    @Test func peersFoundByAvahiAreReadFromItsParsableOutput() {
        let output = """
            +;eth0;IPv4;backlot-1a2b3c4d;_backlot._tcp;local
            =;eth0;IPv4;backlot-1a2b3c4d;_backlot._tcp;local;dev-a.local;10.213.0.11;7301;
            =;eth0;IPv6;backlot-1a2b3c4d;_backlot._tcp;local;dev-a.local;fe80::1;7301;
            =;eth0;IPv4;other;_http._tcp;local;web.local;10.213.0.20;80;
            =;eth0;IPv4;bad;_backlot._tcp;local;x.local;10.213.0.300;7301;
            =;eth0;IPv4;bad-port;_backlot._tcp;local;x.local;10.213.0.12;99999;
            =;eth0;IPv4;loopback;_backlot._tcp;local;x.local;127.0.0.1;7301;
            =;eth0;IPv4;public;_backlot._tcp;local;x.local;93.184.216.34;7301;
            =;eth0;IPv4;any;_backlot._tcp;local;x.local;0.0.0.0;7301;
            =;eth0;IPv4;metadata;_backlot._tcp;local;x.local;169.254.169.254;80;
            =;eth0;IPv4;lan;_backlot._tcp;local;x.local;192.168.1.20;7301;
            =;eth0;IPv6;global;_backlot._tcp;local;x.local;2001:db8::1;7301;
            =;eth0;IPv6;loopback6;_backlot._tcp;local;x.local;::1;7301;
            =;eth0;IPv6;ula;_backlot._tcp;local;x.local;fd12:3456::7;7301;
            garbage
            """
        #expect(
            PeerDirectory.resolvedPeers(inBrowseOutput: output).map(\.absoluteString) == [
                "http://10.213.0.11:7301", "http://[fe80::1%25eth0]:7301", "http://192.168.1.20:7301",
                "http://[fd12:3456::7]:7301",
            ])
    }

    @Test func aConfigurationNamesPeersAsBaseURLsOnly() throws {
        #expect(PeerDirectory.peerURL("http://10.0.0.2:7301/")?.absoluteString == "http://10.0.0.2:7301")
        for bad in [
            "https://10.0.0.2:7301", "http://10.0.0.2", "http://10.0.0.2:7301/x", "http://u:p@10.0.0.2:7301",
            "http://10.0.0.2:7301?q", "10.0.0.2:7301",
        ] {
            #expect(PeerDirectory.peerURL(bad) == nil, "\(bad)")
        }
        let peers = try PeerDirectory(
            settings: ["BacklotPeers": .array([.string("http://10.0.0.2:7301")]), "BacklotPeerDiscovery": .bool(true)],
            source: "app.json")
        #expect(peers.staticPeers.map(\.absoluteString) == ["http://10.0.0.2:7301"] && peers.discovers)
        #expect(throws: BacklotError.self) {
            try PeerDirectory(settings: ["BacklotPeers": .array([.string("ftp://x:1")])], source: "app.json")
        }
        do {
            _ = try PeerDirectory(settings: ["BacklotPeers": .string("http://10.0.0.2:7301")], source: "app.json")
            Issue.record("a string where an array is needed was accepted")
        } catch let e as BacklotError {
            #expect(e.message.contains("BacklotPeers") && e.context == "app.json")
        }

        #expect(try PeerCacheSettings(settings: [:], source: "a.json") == nil)
        #expect(try PeerCacheSettings(settings: ["BacklotPeerCache": .bool(false)], source: "a.json") == nil)
        let settings = try #require(
            try PeerCacheSettings(
                settings: [
                    "BacklotPeerCache": .bool(true), "BacklotPeerCacheListen": .array([.string("lan0")]),
                    "BacklotPeerCachePort": .integer(8000), "BacklotPeerCacheRate": .integer(1 << 20),
                ], source: "a.json"))
        #expect(settings.port == 8000 && settings.rate == 1 << 20 && settings.listen == ["lan0"])
        #expect(throws: BacklotError.self) {
            try PeerCacheSettings(
                settings: ["BacklotPeerCache": .bool(true), "BacklotPeerCachePort": .integer(70_000)], source: "a.json")
        }
        let interfaces = [
            NetworkInterfaces.Address(interface: "lo", address: "127.0.0.1", isUp: true, isLoopback: true),
            NetworkInterfaces.Address(interface: "lan0", address: "192.168.1.20", isUp: true, isLoopback: false),
            NetworkInterfaces.Address(interface: "wan0", address: "203.0.113.7", isUp: true, isLoopback: false),
            NetworkInterfaces.Address(interface: "down0", address: "10.1.1.1", isUp: false, isLoopback: false),
        ]
        // By default: the private addresses of interfaces that are up, never a public one.
        #expect(try PeerCacheSettings().addresses(interfaces: interfaces) == ["192.168.1.20"])
        #expect(try settings.addresses(interfaces: interfaces) == ["192.168.1.20"])
        var named = PeerCacheSettings()
        named.listen = ["eth9"]
        #expect(throws: BacklotError.self) { try named.addresses(interfaces: interfaces) }
        #expect(throws: BacklotError.self) { try PeerCacheSettings().addresses(interfaces: [interfaces[2]]) }
    }
}
