import BacklotBasics
import BacklotCrypto
import BacklotFormat
import BacklotJSON
import Foundation
import Testing

@testable import BacklotProtocol
@testable import BacklotRepository

struct SignedCatalogTests {
    static let now = Date(timeIntervalSince1970: 1_764_428_400)

    func release(_ version: Int) -> Catalog.Release {
        Catalog.Release(
            version: version, downloadPolicy: .essential(installationEventTypes: [.firstInstallation]),
            platforms: [.iOS, .linux],
            userInfo: JSONNode(
                .object([JSONMember(key: "z", value: .number(1)), JSONMember(key: "a", value: .string("x"))])),
            language: nil, installSize: 2_415_857,
            archiveURL: "../../../packs/\(String(repeating: "ab", count: 32)).pack",
            archiveSize: 1_265_351, archiveSHA256: SHA256.hash(Array("archive\(version)".utf8)),
            indexOffset: 1_263_067, indexLength: 2284, indexSHA256: SHA256.hash(Array("index\(version)".utf8)))
    }

    func catalog(
        version: UInt64 = 100, app: String = "com.example.game", channel: Channel = .production,
        expires: TimeInterval = Catalog.defaultLifetime
    ) throws -> Catalog {
        Catalog(
            app: app, channel: channel, version: version, issued: Self.now,
            expires: Self.now.addingTimeInterval(expires),
            packs: [
                Catalog.Entry(
                    id: try PackID("Levels"), release: release(3), candidate: release(4), rolloutBasisPoints: 2500),
                Catalog.Entry(id: try PackID("Audio"), release: release(1)),
            ])
    }

    @Test func aSignedCatalogVerifiesAndRoundTrips() throws {
        let key = try Ed25519.PrivateKey()
        let c = try catalog()
        let bytes = try SignedEnvelope.sign(payload: c.payload, type: Catalog.payloadType, with: [key]).encoded
        let verified = try Catalog.verify(
            bytes, trusting: [key.publicKey], app: "com.example.game", channel: .production, now: Self.now,
            source: "catalog.json")
        #expect(verified == c)
        #expect(verified.packs.map(\.id.rawValue) == ["Audio", "Levels"])
        #expect(verified.packs[1].release.userInfo?.serialized() == #"{"z":1,"a":"x"}"#)
    }

    @Test func signaturesFailClosed() throws {
        let key = try Ed25519.PrivateKey()
        let other = try Ed25519.PrivateKey()
        let c = try catalog()
        let envelope = try SignedEnvelope.sign(payload: c.payload, type: Catalog.payloadType, with: [key])
        func refused(
            _ bytes: [UInt8], _ keys: [Ed25519.PublicKey], _ phrase: String,
            sourceLocation: SourceLocation = #_sourceLocation
        ) {
            #expect(sourceLocation: sourceLocation) {
                try Catalog.verify(
                    bytes, trusting: keys, app: "com.example.game", channel: .production, now: Self.now,
                    source: "c.json")
            } throws: { error in
                guard let e = error as? BacklotError else { return false }
                return e.code == .untrusted && e.message.contains(phrase)
            }
        }
        refused(envelope.encoded, [other.publicKey], "no valid signature by a trusted key")
        // A payload changed after signing (one byte of the version).
        var tampered = c
        tampered.version += 1
        let forged = SignedEnvelope(
            payloadType: envelope.payloadType, payload: tampered.payload, signatures: envelope.signatures)
        refused(forged.encoded, [key.publicKey], "no valid signature")
        // The signature of another document type does not count.
        let root = try SignedEnvelope.sign(payload: c.payload, type: "application/vnd.backlot.root+json", with: [key])
        refused(root.encoded, [key.publicKey], "not a application/vnd.backlot.catalog+json")
        // A signature with a flipped bit.
        var sig = envelope.signatures[0].signature
        sig[10] ^= 1
        let flipped = SignedEnvelope(
            payloadType: envelope.payloadType, payload: envelope.payload,
            signatures: [.init(keyID: key.publicKey.keyID, signature: sig)])
        refused(flipped.encoded, [key.publicKey], "no valid signature")
        refused(Array("{}".utf8), [key.publicKey], "not a signed envelope")
    }

    @Test func wrongAppChannelExpiryAndRollbackAreRefused() throws {
        let key = try Ed25519.PrivateKey()
        func signed(_ c: Catalog) throws -> [UInt8] {
            try SignedEnvelope.sign(payload: c.payload, type: Catalog.payloadType, with: [key]).encoded
        }
        let good = try signed(catalog(version: 100))
        #expect(throws: BacklotError.self) {
            try Catalog.verify(
                good, trusting: [key.publicKey], app: "com.other", channel: .production, now: Self.now, source: "c")
        }
        #expect(throws: BacklotError.self) {
            try Catalog.verify(
                good, trusting: [key.publicKey], app: "com.example.game", channel: .internal, now: Self.now, source: "c"
            )
        }
        #expect(throws: BacklotError.self) {
            try Catalog.verify(
                good, trusting: [key.publicKey], app: "com.example.game", channel: .production,
                now: Self.now.addingTimeInterval(Catalog.defaultLifetime + 1), source: "c")
        }
        #expect(throws: BacklotError.self) {
            try Catalog.verify(
                good, trusting: [key.publicKey], app: "com.example.game", channel: .production, now: Self.now,
                newerThan: 101, source: "c")
        }
        _ = try Catalog.verify(
            good, trusting: [key.publicKey], app: "com.example.game", channel: .production, now: Self.now,
            newerThan: 100, source: "c")
    }

    @Test func catalogVersionsOnlyGrow() {
        #expect(Catalog.nextVersion(after: 5, now: Date(timeIntervalSince1970: 1000)) == 1000)
        #expect(Catalog.nextVersion(after: 5000, now: Date(timeIntervalSince1970: 1000)) == 5001)
    }

    @Test func keysSignAndVerifyAndHaveStableIDs() throws {
        let key = try Ed25519.PrivateKey()
        let again = try Ed25519.PrivateKey(rawRepresentation: key.rawRepresentation)
        #expect(again.publicKey == key.publicKey)
        #expect(key.publicKey.keyID == SHA256.hash(key.publicKey.rawRepresentation).hex)
        let sig = try key.signature(for: Array("hello".utf8))
        #expect(key.publicKey.isValidSignature(sig, for: Array("hello".utf8)))
        #expect(!key.publicKey.isValidSignature(sig, for: Array("hellO".utf8)))
        #expect(!key.publicKey.isValidSignature(Array(sig.prefix(63)), for: Array("hello".utf8)))
        #expect(throws: BacklotError.self) { try Ed25519.PublicKey(rawRepresentation: [1, 2, 3]) }
    }

    /// RFC 8032 test vector 1 (empty message): OpenSSL's Ed25519 must give exactly this signature.
    @Test func rfc8032Vector() throws {
        func hex(_ s: String) -> [UInt8] {
            stride(from: 0, to: s.count, by: 2).map { UInt8(s.dropFirst($0).prefix(2), radix: 16)! }
        }
        let key = try Ed25519.PrivateKey(
            rawRepresentation: hex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"))
        #expect(
            key.publicKey.rawRepresentation == hex("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"))
        #expect(
            try key.signature(for: [])
                == hex(
                    "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"
                ))
    }

    @Test func dssePreAuthenticationEncodingIsExact() {
        #expect(
            SignedEnvelope.preAuthenticationEncoding(type: "t", payload: Array("hi".utf8))
                == Array("DSSEv1 1 t 2 hi".utf8))
    }

    /// Vectors computed independently (Python hashlib) and listed in docs/protocol.md §4.
    @Test func rolloutBucketsMatchTheDocumentedVectors() {
        #expect(
            RolloutBucket.bucket(deviceID: "00000000-0000-0000-0000-000000000000", packID: "Levels", version: 1) == 5376
        )
        #expect(
            RolloutBucket.bucket(deviceID: "2f1c3a6e-8d4b-4f0e-9a57-3c2d1e0f9b8a", packID: "Levels", version: 2) == 1278
        )
        #expect(
            RolloutBucket.bucket(
                deviceID: "2f1c3a6e-8d4b-4f0e-9a57-3c2d1e0f9b8a", packID: "com.example.voice", version: 17) == 1629)
    }

    @Test func rolloutSharesAreRoughlyThePercentageAndGrowMonotonically() throws {
        let c = try catalog()
        let entry = c.packs.first { $0.id.rawValue == "Levels" }!
        let devices = (0..<4000).map { "device-\($0)" }
        let taking = devices.filter { entry.release(forDevice: $0).version == 4 }.count
        #expect(taking > 800 && taking < 1200, "\(taking) of 4000 at 25 %")
        let at10 = Set(
            devices.filter {
                RolloutBucket.takesCandidate(deviceID: $0, packID: "Levels", version: 4, basisPoints: 1000)
            })
        let at30 = Set(
            devices.filter {
                RolloutBucket.takesCandidate(deviceID: $0, packID: "Levels", version: 4, basisPoints: 3000)
            })
        #expect(at10.isSubset(of: at30))
        #expect(
            devices.allSatisfy {
                !RolloutBucket.takesCandidate(deviceID: $0, packID: "Levels", version: 4, basisPoints: 0)
            })
        #expect(
            devices.allSatisfy {
                RolloutBucket.takesCandidate(deviceID: $0, packID: "Levels", version: 4, basisPoints: 10_000)
            })
    }
}

struct KeyRotationTests {
    func rotation(
        from old: Ed25519.PrivateKey, to new: Ed25519.PrivateKey, version: Int, signers: [Ed25519.PrivateKey]? = nil
    ) throws -> [UInt8] {
        try SignedEnvelope.sign(
            payload: KeyList(version: version, keys: [new.publicKey]).payload, type: KeyList.payloadType,
            with: signers ?? [old, new]
        ).encoded
    }

    @Test func aPinnedClientFollowsRotationsSignedByTheOldAndNewKeys() throws {
        let k1 = try Ed25519.PrivateKey()
        let k2 = try Ed25519.PrivateKey()
        let k3 = try Ed25519.PrivateKey()
        let chain = [2: try rotation(from: k1, to: k2, version: 2), 3: try rotation(from: k2, to: k3, version: 3)]
        let trusted = try KeyList.follow(from: KeyList(version: 1, keys: [k1.publicKey])) { chain[$0] }
        #expect(trusted.version == 3 && trusted.keys == [k3.publicKey])
    }

    @Test func rotationsNotSignedByATrustedKeyOrNotByTheNewKeyOrSkippingAreRefused() throws {
        let k1 = try Ed25519.PrivateKey()
        let k2 = try Ed25519.PrivateKey()
        let evil = try Ed25519.PrivateKey()
        let start = KeyList(version: 1, keys: [k1.publicKey])
        #expect(throws: BacklotError.self) {
            try start.accept(next: try rotation(from: evil, to: k2, version: 2, signers: [evil, k2]), source: "r")
        }
        #expect(throws: BacklotError.self) {
            try start.accept(next: try rotation(from: k1, to: k2, version: 2, signers: [k1]), source: "r")
        }
        #expect(throws: BacklotError.self) {
            try start.accept(next: try rotation(from: k1, to: k2, version: 3), source: "r")
        }
        #expect(try start.accept(next: try rotation(from: k1, to: k2, version: 2), source: "r").keys == [k2.publicKey])
    }
}
