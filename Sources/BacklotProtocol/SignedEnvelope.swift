import BacklotBasics
import BacklotCrypto
import BacklotJSON
import Foundation

/// A signed document: the exact payload bytes, their type, and Ed25519 signatures over the DSSE
/// pre-authentication encoding (`docs/protocol.md` §2).
///
/// ```swift
/// let envelope = try SignedEnvelope.sign(payload: bytes, type: Catalog.payloadType, with: [key])
/// let verified = try SignedEnvelope.open(envelope.encoded, expecting: Catalog.payloadType, trusting: [key.publicKey])
/// ```
public struct SignedEnvelope: Sendable, Hashable {
    /// One signature.
    public struct Signature: Sendable, Hashable {
        /// Hex SHA-256 of the signer's raw public key.
        public let keyID: String
        /// The 64-byte Ed25519 signature.
        public let signature: [UInt8]
    }

    public let payloadType: String
    public let payload: [UInt8]
    public let signatures: [Signature]

    /// The largest envelope a reader accepts.
    public static let maximumSize = 64 << 20

    /// The bytes that are signed: `DSSEv1 SP LEN(type) SP type SP LEN(payload) SP payload`.
    public static func preAuthenticationEncoding(type: String, payload: [UInt8]) -> [UInt8] {
        Array("DSSEv1 \(type.utf8.count) \(type) \(payload.count) ".utf8) + payload
    }

    /// Signs `payload` with every key given.
    public static func sign(payload: [UInt8], type: String, with keys: [Ed25519.PrivateKey]) throws -> SignedEnvelope {
        let message = preAuthenticationEncoding(type: type, payload: payload)
        let signatures = try keys.map {
            Signature(keyID: $0.publicKey.keyID, signature: try $0.signature(for: message))
        }
        return SignedEnvelope(payloadType: type, payload: payload, signatures: signatures)
    }

    /// The envelope as JSON bytes.
    public var encoded: [UInt8] {
        let json = JSONNode.object([
            "payloadType": .string(payloadType),
            "payload": .string(Data(payload).base64EncodedString()),
            "signatures": .array(
                signatures.map {
                    .object(["keyid": .string($0.keyID), "sig": .string(Data($0.signature).base64EncodedString())])
                }),
        ])
        return Array((json.prettyPrinted() + "\n").utf8)
    }

    /// Parses an envelope without trusting it (use ``open(_:expecting:trusting:source:)`` to read its payload).
    public static func decode(_ bytes: [UInt8], source: String) throws -> SignedEnvelope {
        guard bytes.count <= maximumSize else {
            throw BacklotError(
                .untrusted, "the signed document is \(bytes.count) bytes; at most \(maximumSize) are read",
                context: source)
        }
        // Deep enough that a malformed signature entry nested inside is skipped, not fatal; the
        // envelope must still be JSON (no duplicate names), or nothing in it can be trusted.
        let root = try JSONReader(source: source, allowsComments: false, allowsTrailingCommas: false, maximumDepth: 64)
            .read(bytes).root
        guard let type = root["payloadType"]?.stringValue, let payloadText = root["payload"]?.stringValue,
            let payload = Data(base64Encoded: payloadText), let list = root["signatures"]?.arrayElements
        else {
            throw BacklotError(
                .untrusted, "not a signed envelope (payloadType, payload and signatures are required)", context: source)
        }
        // A malformed entry (no keyid, a keyid that is not a string, no sig, bad base64) is skipped
        // like a bad signature (§2): the envelope stands if another signature is valid.
        let signatures = list.compactMap { s -> Signature? in
            guard let id = s["keyid"]?.stringValue, let text = s["sig"]?.stringValue,
                let sig = Data(base64Encoded: text)
            else { return nil }
            return Signature(keyID: id, signature: Array(sig))
        }
        return SignedEnvelope(payloadType: type, payload: Array(payload), signatures: signatures)
    }

    /// Verifies and returns the payload: it must be of `type` and carry a valid signature by at
    /// least one of `trusted` (or by every one, when `requireAll` is set).
    /// - Throws: ``BacklotError/Code/untrusted`` saying why; the payload is not parsed before that.
    public static func open(
        _ bytes: [UInt8], expecting type: String, trusting trusted: [Ed25519.PublicKey],
        requireAll: Bool = false, source: String
    ) throws -> [UInt8] {
        let envelope = try decode(bytes, source: source)
        guard envelope.payloadType == type else {
            throw BacklotError(.untrusted, "the document is a \(envelope.payloadType), not a \(type)", context: source)
        }
        let message = preAuthenticationEncoding(type: type, payload: envelope.payload)
        var valid = Set<String>()
        for s in envelope.signatures {
            guard let key = trusted.first(where: { $0.keyID == s.keyID }) else { continue }
            if key.isValidSignature(s.signature, for: message) { valid.insert(key.keyID) }
        }
        let needed = requireAll ? Set(trusted.map(\.keyID)) : []
        guard !valid.isEmpty, needed.isSubset(of: valid) else {
            let known = envelope.signatures.map { String($0.keyID.prefix(12)) }.joined(separator: ", ")
            throw BacklotError(
                .untrusted,
                requireAll && !valid.isEmpty
                    ? "the document is not signed by every required key"
                    : "no valid signature by a trusted key (signed by: \(known.isEmpty ? "nobody" : known))",
                context: source, hint: "check the pinned key (root.pub), or whether the document was altered")
        }
        return envelope.payload
    }
}
