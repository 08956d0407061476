import BacklotBasics
import BacklotCrypto
import BacklotProtocol
import Foundation

/// The signing keys: the current one, those a rotation retired, and the rotation itself.
extension Publication {
    /// The signing keys, newest first: the current one (retired nil), then each one a rotation
    /// replaced (``rotateKey()`` keeps it as `keys/signing-N.key`, N its key list version).
    /// Times are those of the files: a key's `since` is when the key before it was retired (the
    /// first key's, when the first key list was written).
    /// - Throws: what reading the key files throws.
    public func signingKeys() throws -> [SigningKeyInfo] {
        func modified(_ path: String) -> Date? {
            (try? FileManager.default.attributesOfItem(atPath: path))?[.modificationDate] as? Date
        }
        var retired: [(version: Int, key: Ed25519.PrivateKey, at: Date)] = []
        for raw in (try? FileSystem.entryNames(directory.keysPath)) ?? [] {
            let name = String(decoding: raw, as: UTF8.self)
            guard name.hasPrefix("signing-"), name.hasSuffix(".key"),
                let version = CheckedInteger.parse(name.dropFirst(8).dropLast(4), as: Int.self)
            else { continue }
            let path = directory.keysPath + "/" + name
            let text = try String(contentsOfFile: path, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            guard let bytes = Data(base64Encoded: text),
                let key = try? Ed25519.PrivateKey(rawRepresentation: Array(bytes))
            else { continue }
            retired.append((version, key, modified(path) ?? Date(timeIntervalSince1970: 0)))
        }
        retired.sort { $0.version < $1.version }
        let first =
            modified(directory.publicTreePath + "/" + PublishedTreeLayout.keyList(version: 1).path) ?? modified(
                directory.publicKeyPath)
            ?? Date(timeIntervalSince1970: 0)
        func info(_ key: Ed25519.PrivateKey, since: Date, retired: Date?) -> SigningKeyInfo {
            SigningKeyInfo(
                keyID: key.publicKey.keyID, publicKey: Data(key.publicKey.rawRepresentation).base64EncodedString(),
                since: since, retired: retired)
        }
        var keys: [SigningKeyInfo] = []
        var since = first
        for r in retired {
            keys.append(info(r.key, since: since, retired: r.at))
            since = r.at
        }
        keys.append(info(try directory.signingKey(), since: since, retired: nil))
        return keys.reversed()
    }

    /// Makes a new signing key, publishes key list N+1 signed by the old and new keys, and re-signs every catalog with the new key.
    /// - Returns: the new key list version.
    @discardableResult
    public func rotateKey() throws -> Int {
        let old = try directory.signingKey()
        let treeKeys = PublishedTreeLayout.keysFolder
        let versions = try tree.fileNames(in: treeKeys).compactMap { name -> Int? in
            guard case .keyList(let version)? = PublishedTreeLayout(path: treeKeys + "/" + name) else { return nil }
            return version
        }
        let next = try CheckedInteger.add(versions.max() ?? 1, 1, "the next key list version", context: treeKeys)
        let new = try Ed25519.PrivateKey()
        let signed = try SignedEnvelope.sign(
            payload: KeyList(version: next, keys: [new.publicKey]).payload, type: KeyList.payloadType, with: [old, new]
        ).encoded
        try tree.write(signed, at: PublishedTreeLayout.keyList(version: next).path)
        try RepositoryDirectory.writeSecret(
            Data(old.rawRepresentation).base64EncodedString() + "\n",
            to: directory.keysPath + "/signing-\(next - 1).key")
        try RepositoryDirectory.writeSecret(
            Data(new.rawRepresentation).base64EncodedString() + "\n", to: directory.signingKeyPath)
        try RepositoryDirectory.writePublic(
            Data(new.publicKey.rawRepresentation).base64EncodedString() + "\n", to: directory.publicKeyPath)
        try tree.write(signed, at: PublishedTreeLayout.currentKeyList.path)
        try resign(margin: .infinity)
        try audit.recordAlone(
            .keyRotate, details: [.keyList: String(next), .keyId: new.publicKey.keyID, .from: old.publicKey.keyID])
        return next
    }

    /// Every published catalog with its version and expiry, by app and channel.
    public func catalogs() throws -> [(app: String, channel: Channel, version: UInt64, expires: Date)] {
        try db.read { try $0.query("SELECT * FROM catalogs ORDER BY app, channel", []) }.compactMap { r in
            guard let app = r["app"]?.string, let channel = r["channel"]?.string.flatMap(Channel.init(rawValue:)),
                let version = r["version"]?.integer(as: UInt64.self)
            else { return nil }
            return (app, channel, version, Date(timeIntervalSince1970: Double(r["expires"]?.int ?? 0)))
        }
    }
}
