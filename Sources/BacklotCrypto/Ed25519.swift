import BacklotBasics
import CCrypto

/// Ed25519 signatures through OpenSSL's libcrypto.
///
/// ```swift
/// let key = try Ed25519.PrivateKey()
/// let signature = try key.signature(for: message)
/// let ok = key.publicKey.isValidSignature(signature, for: message)
/// ```
public enum Ed25519 {
    /// A private signing key (32 raw bytes).
    public struct PrivateKey: Sendable {
        /// The 32-byte seed, as stored on disk.
        public let rawRepresentation: [UInt8]
        public let publicKey: PublicKey

        /// Generates a new key from the operating system's random source.
        public init() throws {
            guard let ctx = EVP_PKEY_CTX_new_id(EVP_PKEY_ED25519, nil) else {
                throw Ed25519.failure("create a key context")
            }
            defer { EVP_PKEY_CTX_free(ctx) }
            var pkey: OpaquePointer? = nil
            guard EVP_PKEY_keygen_init(ctx) == 1, EVP_PKEY_keygen(ctx, &pkey) == 1, let pkey else {
                throw Ed25519.failure("generate a key")
            }
            defer { EVP_PKEY_free(pkey) }
            try self.init(rawRepresentation: Ed25519.raw(pkey, privatePart: true))
        }

        /// Loads a key from its 32 raw bytes.
        /// - Throws: ``BacklotError/Code/invalidInput`` for another length.
        public init(rawRepresentation: [UInt8]) throws {
            guard rawRepresentation.count == 32 else {
                throw BacklotError(.invalidInput, "an Ed25519 private key has 32 bytes, not \(rawRepresentation.count)")
            }
            let pkey = try Ed25519.load(rawRepresentation, isPrivate: true)
            defer { EVP_PKEY_free(pkey) }
            self.rawRepresentation = rawRepresentation
            publicKey = try PublicKey(rawRepresentation: Ed25519.raw(pkey, privatePart: false))
        }

        /// The 64-byte signature of `message`.
        public func signature(for message: [UInt8]) throws -> [UInt8] {
            let pkey = try Ed25519.load(rawRepresentation, isPrivate: true)
            defer { EVP_PKEY_free(pkey) }
            guard let md = EVP_MD_CTX_new() else { throw Ed25519.failure("create a signing context") }
            defer { EVP_MD_CTX_free(md) }
            var signature = [UInt8](repeating: 0, count: 64)
            var length = 64
            let ok = message.withUnsafeBufferPointer { m in
                EVP_DigestSignInit(md, nil, nil, nil, pkey) == 1
                    && EVP_DigestSign(md, &signature, &length, m.baseAddress ?? UnsafePointer(bitPattern: 1), m.count)
                        == 1
            }
            guard ok, length == 64 else { throw Ed25519.failure("sign") }
            return signature
        }
    }

    /// A public verification key (32 raw bytes).
    public struct PublicKey: Sendable, Hashable {
        public let rawRepresentation: [UInt8]

        /// Loads a key from its 32 raw bytes.
        public init(rawRepresentation: [UInt8]) throws {
            guard rawRepresentation.count == 32 else {
                throw BacklotError(.invalidInput, "an Ed25519 public key has 32 bytes, not \(rawRepresentation.count)")
            }
            EVP_PKEY_free(try Ed25519.load(rawRepresentation, isPrivate: false))
            self.rawRepresentation = rawRepresentation
        }

        /// The key ID: lowercase hex SHA-256 of the raw public key.
        public var keyID: String { SHA256.hash(rawRepresentation).hex }

        /// Whether `signature` is a valid signature of `message` by this key. Never throws: anything
        /// malformed is simply not valid.
        public func isValidSignature(_ signature: [UInt8], for message: [UInt8]) -> Bool {
            guard signature.count == 64, let pkey = try? Ed25519.load(rawRepresentation, isPrivate: false) else {
                return false
            }
            defer { EVP_PKEY_free(pkey) }
            guard let md = EVP_MD_CTX_new() else { return false }
            defer { EVP_MD_CTX_free(md) }
            return message.withUnsafeBufferPointer { m in
                EVP_DigestVerifyInit(md, nil, nil, nil, pkey) == 1
                    && EVP_DigestVerify(md, signature, 64, m.baseAddress ?? UnsafePointer(bitPattern: 1), m.count) == 1
            }
        }
    }

    static func failure(_ what: String) -> BacklotError {
        ERR_clear_error()
        return BacklotError(.library, "OpenSSL could not \(what) (Ed25519)")
    }

    static func load(_ raw: [UInt8], isPrivate: Bool) throws -> OpaquePointer {
        let key =
            isPrivate
            ? EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, nil, raw, raw.count)
            : EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nil, raw, raw.count)
        guard let key else { throw failure("load a key") }
        return key
    }

    static func raw(_ pkey: OpaquePointer, privatePart: Bool) throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        var length = 32
        let ok =
            privatePart
            ? EVP_PKEY_get_raw_private_key(pkey, &out, &length) : EVP_PKEY_get_raw_public_key(pkey, &out, &length)
        guard ok == 1, length == 32 else { throw failure("export a key") }
        return out
    }
}
