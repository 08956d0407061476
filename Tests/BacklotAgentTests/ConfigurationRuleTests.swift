import BacklotBasics
import BacklotTaskScheduler
import Foundation
import Testing

@testable import BacklotAgent

/// Configuration a device reads: https catalogs (plain http to this machine only), restriction
/// keys named when mistyped, and key files that are not keys refused with a clear error.
@Suite struct ConfigurationRuleTests {
    func refusal(_ f: AgentFixture, _ extra: [String: Any], name: String) throws -> BacklotError? {
        do {
            _ = try AgentConfiguration(
                path: try f.writeConfig(extra, withExtension: false, name: name), containerPath: f.container)
            return nil
        } catch let e as BacklotError {
            return e
        }
    }

    @Test func plainHTTPIsForThisMachineOnly() throws {
        let f = try AgentFixture()
        for (i, host) in ["cdn.example.com", "10.0.0.1", "127.0.0.1.evil.example"].enumerated() {
            let e = try refusal(
                f, ["BacklotCatalogURL": "http://\(host)/v1/apps/com.example.game/production/catalog.json"],
                name: "h\(i).json")
            #expect(
                e?.code == .invalidInput && e?.description.contains("https://") == true,
                "\(host): \(String(describing: e))")
        }
        for (i, host) in ["127.0.0.1:8080", "localhost", "[::1]:9000"].enumerated() {
            #expect(
                try refusal(
                    f, ["BacklotCatalogURL": "http://\(host)/v1/apps/com.example.game/production/catalog.json"],
                    name: "l\(i).json") == nil, "\(host)")
        }
    }

    @Test func theDeviceProfileKeyOverridesWhatIsDetectedAndNamesWhatIsWrong() throws {
        let f = try AgentFixture()
        let good = try AgentConfiguration(
            path: try f.writeConfig(
                ["BacklotDeviceProfile": "textureFormat=astc+etc2,deviceTier=high"], withExtension: false,
                name: "p.json"),
            containerPath: f.container)
        #expect(good.deviceProfile?.textureFormats == ["astc", "etc2"] && good.deviceProfile?.deviceTier == 2)
        #expect(
            good.managerConfiguration(containerPath: f.container).deviceProfile == good.deviceProfile,
            "the app's manager gets it too")
        let e = try refusal(f, ["BacklotDeviceProfile": "textureFormat=astcc"], name: "bad.json")
        #expect(
            e?.code == .invalidInput && e?.description.contains("BacklotDeviceProfile") == true
                && e?.description.contains("astcc") == true, "\(String(describing: e))")
    }

    @Test func thePeerKeysConfigureAskingAndServingAndNameWhatIsWrong() throws {
        let f = try AgentFixture()
        let off = try AgentConfiguration(
            path: try f.writeConfig([:], withExtension: false, name: "off.json"), containerPath: f.container)
        #expect(off.peerCache == nil && !off.peers.isEnabled, "both are off by default")
        let on = try AgentConfiguration(
            path: try f.writeConfig(
                [
                    "BacklotPeers": ["http://192.168.1.20:7301"], "BacklotPeerDiscovery": true,
                    "BacklotPeerCache": true, "BacklotPeerCacheListen": ["eth0"], "BacklotPeerCachePort": 7400,
                ], withExtension: false, name: "on.json"),
            containerPath: f.container)
        #expect(on.peers.discovers && on.peers.staticPeers.map(\.absoluteString) == ["http://192.168.1.20:7301"])
        #expect(on.managerConfiguration(containerPath: f.container).peers == on.peers, "the app's manager asks them")
        #expect(on.peerCache?.listen == ["eth0"] && on.peerCache?.port == 7400)
        for (i, (key, value)) in [
            ("BacklotPeers", ["https://192.168.1.20:7301"] as Any), ("BacklotPeerCachePort", 0 as Any),
            ("BacklotPeerCache", "yes" as Any), ("BacklotPeerCacheRate", 10 as Any),
        ].enumerated() {
            var settings: [String: Any] = ["BacklotPeerCache": true]
            settings[key] = value
            let e = try refusal(f, settings, name: "b\(i).json")
            #expect(
                e?.code == .invalidInput && e?.description.contains(key) == true, "\(key): \(String(describing: e))")
        }
        let typo = try refusal(f, ["BacklotPeerCash": true], name: "typo.json")
        #expect(typo?.description.contains("BacklotPeerCache") == true, "\(String(describing: typo))")
    }

    @Test func thePeerCacheServesOnlyOnMainsPowerAndAnUnmeteredNetwork() {
        #expect(Agent.peerCacheAllowed(.init()))
        #expect(!Agent.peerCacheAllowed(.init(networkMetered: true)))
        #expect(!Agent.peerCacheAllowed(.init(onExternalPower: false)))
        #expect(!Agent.peerCacheAllowed(.init(batteryLow: true)))
        #expect(!Agent.peerCacheAllowed(.init(networkAvailable: false)))
    }

    @Test func aMistypedRestrictionKeyIsNamed() throws {
        let f = try AgentFixture()
        let restrictions: [String: Any] = [
            "BADownloadAllowence": 1000, "BAEssentialDownloadAllowance": 1000,
            "BADownloadDomainAllowList": ["127.0.0.1"],
        ]
        let e = try refusal(f, ["BAInitialDownloadRestrictions": restrictions], name: "r.json")
        #expect(e?.description.contains("BADownloadAllowence") == true, "\(String(describing: e))")
        #expect(
            e?.description.contains("BADownloadAllowance") == true,
            "the right key is suggested: \(String(describing: e))")
    }

    @Test func aTrustedKeyFileThatIsNotAKeyIsRefusedClearly() throws {
        let f = try AgentFixture()
        let cases: [(String, [UInt8])] = [
            ("pem", Array("-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEA\n-----END PUBLIC KEY-----\n".utf8)),
            ("binary", [0xFF, 0xFE, 0x00, 0x01]), ("short", Array("AAAA\n".utf8)),
        ]
        for (name, bytes) in cases {
            try Data(bytes).write(to: URL(fileURLWithPath: f.server.dir.at("\(name).key")))
            let e = try refusal(f, ["BacklotTrustedKey": "\(name).key"], name: "\(name).json")
            #expect(e?.description.contains("BacklotTrustedKey") == true, "\(name): \(String(describing: e))")
            #expect(e?.description.contains("Cocoa") == false && e?.description.contains("NSCocoaErrorDomain") == false)
        }
        let missing = try refusal(f, ["BacklotTrustedKey": "missing.key"], name: "missing.json")
        #expect(missing?.description.contains("missing.key") == true, "\(String(describing: missing))")
    }
}
