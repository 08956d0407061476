import BacklotBasics
import BacklotCrypto
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A repository's data folder (`backlot serve --data DIR`):
///
/// ```
/// DIR/keys/signing.key      the Ed25519 signing key (0600, base64 of the 32-byte seed)
/// DIR/root.pub              its public key, base64, for clients to pin
/// DIR/tls/                  the local CA and server certificate (--tls auto)
/// DIR/public/               the published tree, served as static files
///   v1/keys/root.json, root-1.json …
/// ```
///
/// Opening a folder for the first time initialises it; later opens reuse what is there.
public struct RepositoryDirectory: Sendable {
    public let path: String

    public var keysPath: String { path + "/keys" }
    public var signingKeyPath: String { keysPath + "/signing.key" }
    public var publicKeyPath: String { path + "/root.pub" }
    public var tlsPath: String { path + "/tls" }
    public var publicTreePath: String { path + "/public" }

    /// Opens (and on first use initialises) a data folder.
    /// - Throws: ``BacklotError/Code/io`` when it cannot be created or read.
    public init(path: String) throws {
        let absolute = URL(fileURLWithPath: path).standardizedFileURL.path
        self.path = absolute
        try FileManager.default.createDirectory(atPath: absolute, withIntermediateDirectories: true)
        for (dir, mode) in [(keysPath, mode_t(0o700)), (tlsPath, mode_t(0o700)), (publicTreePath, mode_t(0o755)),
                            (publicTreePath + "/v1", mode_t(0o755)), (publicTreePath + "/v1/keys", mode_t(0o755))] {
            try FileSystem.makeDirectory(dir, mode: mode)
        }
        if !FileSystem.exists(signingKeyPath) {
            let key = try Ed25519.PrivateKey()
            try Self.writeSecret(Data(key.rawRepresentation).base64EncodedString() + "\n", to: signingKeyPath)
            try Self.writePublic(Data(key.publicKey.rawRepresentation).base64EncodedString() + "\n", to: publicKeyPath)
            let list = KeyList(version: 1, keys: [key.publicKey])
            let signed = try SignedEnvelope.sign(payload: list.payload, type: KeyList.payloadType, with: [key]).encoded
            try Self.writePublic(bytes: signed, to: publicTreePath + "/v1/keys/root-1.json")
            try Self.writePublic(bytes: signed, to: publicTreePath + "/v1/keys/root.json")
        }
    }

    /// The current signing key.
    public func signingKey() throws -> Ed25519.PrivateKey {
        let text = try String(contentsOfFile: signingKeyPath, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        guard let raw = Data(base64Encoded: text) else {
            throw BacklotError(.invalidInput, "the signing key is not base64", context: signingKeyPath, hint: "restore it from a backup")
        }
        return try Ed25519.PrivateKey(rawRepresentation: Array(raw))
    }

    /// Reads a public key file (base64 of the 32 raw bytes), as clients pin it.
    public static func readPublicKey(path: String) throws -> Ed25519.PublicKey {
        let text = try String(contentsOfFile: path, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        guard let raw = Data(base64Encoded: text) else {
            throw BacklotError(.invalidInput, "not a base64 Ed25519 public key", context: path, hint: "use the server's DIR/root.pub")
        }
        return try Ed25519.PublicKey(rawRepresentation: Array(raw))
    }

    /// Writes a file readable by the owner only (0600), atomically.
    public static func writeSecret(_ text: String, to path: String) throws {
        let file = try AtomicFile(path: path, overwrite: true, mode: 0o600)
        try file.descriptor.write(Array(text.utf8))
        try file.commit()
    }

    /// Writes a world-readable file (0644), atomically.
    public static func writePublic(_ text: String, to path: String) throws {
        try writePublic(bytes: Array(text.utf8), to: path)
    }

    /// Writes a world-readable file (0644), atomically.
    public static func writePublic(bytes: [UInt8], to path: String) throws {
        let file = try AtomicFile(path: path, overwrite: true, mode: 0o644)
        try file.descriptor.write(bytes)
        try file.commit()
    }
}
