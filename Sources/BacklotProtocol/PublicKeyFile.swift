import BacklotBasics
import BacklotCrypto
import Foundation

/// The file a client pins: the repository's public key (the server's `root.pub`), one line of
/// base64 of the 32 raw bytes of an Ed25519 key.
///
/// ```swift
/// let key = try PublicKeyFile.read(path: "root.pub")
/// ```
public enum PublicKeyFile {
    /// Reads and checks a public key file (at most 4 KiB are read).
    /// - Throws: ``BacklotError/Code/invalidInput`` naming the file when it is not one such key;
    ///   ``BacklotError/Code/io`` when it cannot be read.
    public static func read(path: String) throws -> Ed25519.PublicKey {
        let bytes = try FileDescriptor.readWholeFile(path, atMost: 4096, what: "a public key file")
        let hint = "use the server's DIR/root.pub: one line, the base64 of the 32-byte Ed25519 public key"
        guard let text = String(validating: bytes, as: UTF8.self)?.trimmingCharacters(in: .whitespacesAndNewlines),
            let raw = Data(base64Encoded: text)
        else {
            throw BacklotError(.invalidInput, "is not a public key (not one line of base64)", context: path, hint: hint)
        }
        guard raw.count == 32 else {
            throw BacklotError(
                .invalidInput, "holds \(raw.count) bytes, not the 32 bytes of an Ed25519 public key", context: path,
                hint: hint)
        }
        return try Ed25519.PublicKey(rawRepresentation: Array(raw))
    }
}
