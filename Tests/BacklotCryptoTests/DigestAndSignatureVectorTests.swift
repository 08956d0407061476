import BacklotBasics
import BacklotCrypto
import Testing

/// SHA-256, HMAC-SHA256 and Ed25519 against the published test vectors (FIPS 180-2, RFC 4231,
/// RFC 8032): the layer every signature and digest in Backlot trusts.
@Suite struct DigestAndSignatureVectorTests {
    static func bytes(_ hex: String) -> [UInt8] {
        var out: [UInt8] = []
        var i = hex.startIndex
        while i < hex.endIndex {
            let j = hex.index(i, offsetBy: 2)
            out.append(UInt8(hex[i..<j], radix: 16)!)
            i = j
        }
        return out
    }

    @Test func sha256Vectors() throws {
        #expect(
            SHA256.hash(Array("abc".utf8)).hex == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(SHA256.hash([]).hex == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        // The streaming hasher, fed in pieces, agrees with the one-shot hash.
        let message = Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)
        var h = SHA256()
        h.update(Array(message[..<7]))
        h.update(Array(message[7...]))
        #expect(h.finalize().hex == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        #expect(SHA256.hash(message).hex == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
    }

    @Test func digestTextRoundTripsAndRefusesWhatIsNotOne() {
        let d = SHA256.hash(Array("abc".utf8))
        #expect(SHA256Digest(hex: d.hex) == d)
        #expect(SHA256Digest(hex: d.hex.uppercased()) == nil || SHA256Digest(hex: d.hex.uppercased()) == d)
        for bad in ["", "ab", String(d.hex.dropLast()), d.hex + "0", String(repeating: "g", count: 64)] {
            #expect(SHA256Digest(hex: bad) == nil, "\(bad) is not a digest")
        }
    }

    @Test func hmacSHA256Vectors() {
        // RFC 4231 test cases 1 and 2.
        #expect(
            HMACSHA256.authenticate(Array("Hi There".utf8), key: [UInt8](repeating: 0x0b, count: 20))
                == Self.bytes("b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"))
        #expect(
            HMACSHA256.authenticate("what do ya want for nothing?", key: Array("Jefe".utf8))
                == Self.bytes("5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"))
        // Test case 6: a key longer than the block is hashed first.
        #expect(
            HMACSHA256.authenticate(
                "Test Using Larger Than Block-Size Key - Hash Key First", key: [UInt8](repeating: 0xaa, count: 131))
                == Self.bytes("60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"))
    }

    @Test func ed25519Vectors() throws {
        // RFC 8032 §7.1, tests 1 and 2.
        let vectors: [(secret: String, public: String, message: String, signature: String)] = [
            (
                "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
                "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a", "",
                "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"
            ),
            (
                "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
                "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c", "72",
                "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00"
            ),
        ]
        for v in vectors {
            let key = try Ed25519.PrivateKey(rawRepresentation: Self.bytes(v.secret))
            #expect(key.publicKey.rawRepresentation == Self.bytes(v.public))
            let message = Self.bytes(v.message)
            let signature = try key.signature(for: message)
            #expect(signature == Self.bytes(v.signature), "Ed25519 is deterministic: the RFC's signature")
            #expect(key.publicKey.isValidSignature(signature, for: message))
            // Any flipped bit of the signature or the message is refused.
            for bit in stride(from: 0, to: signature.count * 8, by: 37) {
                var bad = signature
                bad[bit / 8] ^= 1 << UInt8(bit % 8)
                #expect(!key.publicKey.isValidSignature(bad, for: message))
            }
            #expect(!key.publicKey.isValidSignature(signature, for: message + [0]))
            #expect(
                !key.publicKey.isValidSignature(Array(signature.dropLast()), for: message),
                "a short signature is refused, not read past")
        }
    }

    @Test func keysOfTheWrongSizeAreRefused() {
        #expect(throws: BacklotError.self) {
            try Ed25519.PublicKey(rawRepresentation: [UInt8](repeating: 1, count: 31))
        }
        #expect(throws: BacklotError.self) {
            try Ed25519.PrivateKey(rawRepresentation: [UInt8](repeating: 1, count: 33))
        }
    }

    @Test func aNewKeySignsAndItsIDIsTheDigestOfThePublicKey() throws {
        let key = try Ed25519.PrivateKey()
        let other = try Ed25519.PrivateKey()
        #expect(key.rawRepresentation != other.rawRepresentation)
        let signature = try key.signature(for: Array("catalog".utf8))
        #expect(key.publicKey.isValidSignature(signature, for: Array("catalog".utf8)))
        #expect(!other.publicKey.isValidSignature(signature, for: Array("catalog".utf8)))
        #expect(key.publicKey.keyID == SHA256.hash(key.publicKey.rawRepresentation).hex)
    }
}
