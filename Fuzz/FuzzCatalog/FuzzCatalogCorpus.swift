import BacklotCrypto
import BacklotFormat
import BacklotJSON
import BacklotProtocol
import Foundation

/// The seed corpus of the catalog harness: a signed catalog (one pack with a candidate in
/// rollout), its bare payload, a signed key list (version 2, signed by the fixed key), its payload.
enum FuzzCatalogCorpus {
    static func write(to directory: String) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let key = try Ed25519.PrivateKey(rawRepresentation: FuzzCatalogKey.seed)
        let digest = SHA256.hash(Array("fuzz".utf8))
        func release(_ version: Int) -> Catalog.Release {
            Catalog.Release(
                version: version,
                downloadPolicy: .essential(installationEventTypes: [.firstInstallation, .subsequentUpdate]),
                platforms: [.iOS, .linux], userInfo: JSONNode.object(["level": .number(3)]), language: "en",
                installSize: 4096, archiveURL: "../../packs/\(digest.hex).pack", archiveSize: 2048,
                archiveSHA256: digest,
                indexOffset: 1800, indexLength: 248, indexSHA256: digest)
        }
        let catalog = Catalog(
            app: "com.example.app", channel: .production, version: 1_700_000_100,
            issued: Date(timeIntervalSince1970: 1_699_999_000), expires: Date(timeIntervalSince1970: 1_701_000_000),
            packs: [
                Catalog.Entry(
                    id: try PackID("Level1"), release: release(1), candidate: release(2), rolloutBasisPoints: 2500),
                Catalog.Entry(id: try PackID("Tutorial"), release: release(7)),
            ])
        let list = KeyList(version: 2, keys: [key.publicKey])
        let files: [(String, [UInt8])] = [
            (
                "catalog.signed.json",
                try SignedEnvelope.sign(payload: catalog.payload, type: Catalog.payloadType, with: [key]).encoded
            ),
            ("catalog.payload.json", catalog.payload),
            (
                "keylist.signed.json",
                try SignedEnvelope.sign(payload: list.payload, type: KeyList.payloadType, with: [key]).encoded
            ),
            ("keylist.payload.json", list.payload),
        ]
        for (name, bytes) in files {
            try Data(bytes).write(to: URL(fileURLWithPath: directory + "/" + name))
        }
    }
}
