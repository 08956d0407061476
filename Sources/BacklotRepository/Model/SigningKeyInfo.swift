import BacklotProtocol
import Foundation

/// A signing key of the repository, current or retired, as `GET /api/keys` lists it (never the private part).
///
/// ```swift
/// for key in try repository.publication.signingKeys() { print(key.keyID, key.retired == nil ? "current" : "retired") }
/// ```
public struct SigningKeyInfo: Sendable, Hashable {
    /// The key's id in signatures (``BacklotCrypto/Ed25519/PublicKey/keyID``).
    public let keyID: String
    /// The 32-byte Ed25519 public key, base64.
    public let publicKey: String
    /// When it became the signing key (its key list was written).
    public let since: Date
    /// When a rotation replaced it; nil for the current key.
    public let retired: Date?
}
