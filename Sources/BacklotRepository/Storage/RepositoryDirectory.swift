import BacklotBasics
import BacklotCrypto
import BacklotProtocol
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A repository's data folder (`backlot serve --data DIR`):
///
/// ```
/// DIR                       0711: reachable (for DIR/public), not listable
/// DIR/.lock                 held by the one process that writes the folder (RepositoryLock)
/// DIR/keys/signing.key      the Ed25519 signing key (0600 in a 0700 folder, base64 of the 32-byte seed)
/// DIR/root.pub              its public key, base64, for clients to pin
/// DIR/tls/                  the local CA and server certificate (--tls auto), 0700
/// DIR/staging/              temporaries of the published tree, renamed into it when complete (0700)
/// DIR/public/               the published tree, served as static files: dirs 0755, files 0644
///   v1/keys/root.json, root-1.json …
/// ```
///
/// Opening a folder for the first time initialises it; later opens reuse what is there. Modes are
/// set explicitly, whatever the umask.
public struct RepositoryDirectory: Sendable {
    public let path: String

    public var keysPath: String { path + "/keys" }
    /// The signing key: `DIR/keys/signing.key`, or the file given (shared by several servers).
    public let signingKeyPath: String
    public var publicKeyPath: String { path + "/root.pub" }
    public var tlsPath: String { path + "/tls" }
    public var publicTreePath: String { path + "/public" }
    /// Where files of the published tree are written before they are renamed into it (never served).
    public var stagingPath: String { path + "/staging" }
    /// A random name of this folder's storage, made once (``storageID()``): how a shared database
    /// tells two folders apart (``Repository/storageRecord``).
    public var storageIDPath: String { path + "/storage-id" }

    /// Opens (and on first use initialises) a data folder.
    ///
    /// With `signingKeyFile` (`backlot serve --signing-key FILE`, the one key every server of a
    /// repository signs with), that key is used instead of `DIR/keys/signing.key`: the first key
    /// list and `DIR/root.pub` are made from it, and it is refused unless only its owner may read it.
    ///
    /// ```swift
    /// let dir = try RepositoryDirectory(path: "/var/lib/backlot", signingKeyFile: "/etc/backlot/signing.key")
    /// ```
    /// - Throws: ``BacklotError/Code/io`` when it cannot be created or read; ``BacklotError/Code/invalidInput``
    ///   for a signing key file that others may read, that is not a key, or that is not the key the folder was made with.
    public init(path: String, signingKeyFile: String? = nil) throws {
        let absolute = URL(fileURLWithPath: path).standardizedFileURL.path
        self.path = absolute
        signingKeyPath =
            signingKeyFile.map { URL(fileURLWithPath: $0).standardizedFileURL.path } ?? absolute + "/keys/signing.key"
        if let signingKeyFile { try Self.checkPrivate(signingKeyFile) }
        try FileSystem.makeDirectories(absolute)
        chmod(absolute, 0o711)
        for (dir, mode) in [(keysPath, mode_t(0o700)), (tlsPath, mode_t(0o700)), (stagingPath, mode_t(0o700))] {
            try FileSystem.makeDirectory(dir, mode: mode)
            chmod(dir, mode)
        }
        for dir in ["", "/" + PublishedTreeLayout.root, "/" + PublishedTreeLayout.keysFolder] {
            try makeTreeDirectory(publicTreePath + dir)
        }
        if signingKeyFile != nil {
            let key = try signingKey()
            let pub = Data(key.publicKey.rawRepresentation).base64EncodedString() + "\n"
            if let pinned = try? String(contentsOfFile: publicKeyPath, encoding: .utf8), pinned != pub {
                throw BacklotError(
                    .invalidInput,
                    "is not the signing key of the data folder \(absolute) (its root.pub is another key)",
                    context: signingKeyPath,
                    hint:
                        "give the key this folder was made with, or a new data folder (the bucket and database keep the repository)"
                )
            }
            if !FileSystem.exists(publicTreePath + "/" + PublishedTreeLayout.currentKeyList.path) {
                try Self.writePublic(pub, to: publicKeyPath)
                let list = KeyList(version: 1, keys: [key.publicKey])
                let signed = try SignedEnvelope.sign(payload: list.payload, type: KeyList.payloadType, with: [key])
                    .encoded
                try writeIntoTree(signed, to: publicTreePath + "/" + PublishedTreeLayout.keyList(version: 1).path)
                try writeIntoTree(signed, to: publicTreePath + "/" + PublishedTreeLayout.currentKeyList.path)
            }
        } else if !FileSystem.exists(signingKeyPath) {
            let key = try Ed25519.PrivateKey()
            try Self.writeSecret(Data(key.rawRepresentation).base64EncodedString() + "\n", to: signingKeyPath)
            try Self.writePublic(Data(key.publicKey.rawRepresentation).base64EncodedString() + "\n", to: publicKeyPath)
            let list = KeyList(version: 1, keys: [key.publicKey])
            let signed = try SignedEnvelope.sign(payload: list.payload, type: KeyList.payloadType, with: [key]).encoded
            try writeIntoTree(signed, to: publicTreePath + "/" + PublishedTreeLayout.keyList(version: 1).path)
            try writeIntoTree(signed, to: publicTreePath + "/" + PublishedTreeLayout.currentKeyList.path)
        }
    }

    // MARK: The published tree

    /// Creates a folder of the published tree and any missing parents, each 0755 whatever the umask.
    public func makeTreeDirectory(_ folder: String) throws {
        var missing: [String] = []
        var current = folder
        while !FileSystem.exists(current), current.count > path.count {
            missing.append(current)
            current = URL(fileURLWithPath: current).deletingLastPathComponent().path
        }
        for dir in missing.reversed() {
            try FileSystem.makeDirectory(dir, mode: 0o755)
            chmod(dir, 0o755)
        }
    }

    /// Writes a file of the published tree (0644 whatever the umask): the bytes go to a temporary
    /// in ``stagingPath`` — outside the served tree, so a crash never leaves a half-written file
    /// where it is served — are flushed, then renamed into place.
    public func writeIntoTree(_ bytes: [UInt8], to destination: String) throws {
        var template = Array("\(stagingPath)/tree-XXXXXX".utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard fd >= 0 else { throw SystemCall.error("create a temporary file", path: stagingPath) }
        let temporary = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        let file = FileDescriptor(rawValue: fd, path: temporary)
        do {
            fchmod(fd, 0o644)
            try file.write(bytes)
            try file.sync()
            file.close()
            try SystemCall.retrying("rename", path: destination) { rename(temporary, destination) }
            FileSystem.syncDirectory(containing: destination)
        } catch {
            file.close()
            unlink(temporary)
            throw error
        }
    }

    /// Makes `source`'s bytes visible at `destination` in the published tree: a hard link made in
    /// ``stagingPath`` and renamed into place (a copy when they are on different file systems).
    /// - Parameter replacing: whether an existing destination is replaced (else it is kept).
    public func linkIntoTree(from source: String, to destination: String, replacing: Bool) throws {
        if !replacing, FileSystem.exists(destination) { return }
        chmod(source, 0o644)  // a hard link shares the mode: the tree must be world-readable
        let staged = stagingPath + "/link-" + UUID().uuidString
        guard link(source, staged) == 0 else {
            guard errno == EXDEV else { throw SystemCall.error("link", path: staged) }
            try writeIntoTree(Array(try Data(contentsOf: URL(fileURLWithPath: source))), to: destination)
            return
        }
        do {
            try SystemCall.retrying("rename", path: destination) { rename(staged, destination) }
        } catch {
            unlink(staged)
            throw error
        }
    }

    /// Puts the modes right (the published tree world-readable: dirs 0755, files 0644; secrets and
    /// their folders private) and removes temporaries a crash left, in ``stagingPath`` and — from
    /// earlier versions, which wrote them beside their destination — hidden `.NAME.tmp-*` files in
    /// the tree. Links are never followed.
    public func repairModes() throws {
        for name in (try? FileSystem.entryNames(stagingPath)) ?? [] {
            unlink(stagingPath + "/" + String(decoding: name, as: UTF8.self))
        }
        for (dir, mode) in [(keysPath, mode_t(0o700)), (tlsPath, mode_t(0o700)), (stagingPath, mode_t(0o700))]
        where FileSystem.exists(dir) {
            chmod(dir, mode)
        }
        for name in (try? FileSystem.entryNames(keysPath)) ?? [] {
            chmod(keysPath + "/" + String(decoding: name, as: UTF8.self), 0o600)
        }
        var folders = [publicTreePath]
        while let folder = folders.popLast() {
            chmod(folder, 0o755)
            for raw in (try? FileSystem.entryNames(folder)) ?? [] {
                let name = String(decoding: raw, as: UTF8.self)
                let full = folder + "/" + name
                switch (try? FileSystem.linkStatus(full))??.kind {
                case .directory?: folders.append(full)
                case .regular?:
                    if name.hasPrefix("."), name.contains(".tmp-") { unlink(full) } else { chmod(full, 0o644) }
                default: break
                }
            }
        }
    }

    /// Refuses a key file that anyone but its owner may read or write (it signs every catalog).
    static func checkPrivate(_ file: String) throws {
        guard let status = try FileSystem.status(file) else {
            throw BacklotError(
                .invalidInput, "there is no signing key file", context: file,
                hint:
                    "copy the repository's signing key there (mode 0600), or leave --signing-key out for DIR/keys/signing.key"
            )
        }
        guard status.mode & 0o077 == 0 else {
            throw BacklotError(
                .invalidInput, "the signing key is open to others (mode \(String(status.mode & 0o777, radix: 8)))",
                context: file,
                hint: "chmod 600 \(file)")
        }
    }

    /// The current signing key.
    public func signingKey() throws -> Ed25519.PrivateKey {
        let text = try String(contentsOfFile: signingKeyPath, encoding: .utf8).trimmingCharacters(
            in: .whitespacesAndNewlines)
        guard let raw = Data(base64Encoded: text) else {
            throw BacklotError(
                .invalidInput, "the signing key is not base64", context: signingKeyPath,
                hint: "restore it from a backup")
        }
        return try Ed25519.PrivateKey(rawRepresentation: Array(raw))
    }

    /// Writes a file readable by the owner only (0600), atomically.
    /// This folder's storage ID: a random UUID written to ``storageIDPath`` the first time it is
    /// asked for, the same ever after (it moves with the folder when the folder is moved or copied).
    /// - Throws: ``BacklotError/Code/io`` when the file cannot be read or written.
    public func storageID() throws -> String {
        if FileSystem.exists(storageIDPath) {
            let text = (try? String(contentsOfFile: storageIDPath, encoding: .utf8)) ?? ""
            let id = text.trimmingCharacters(in: .whitespacesAndNewlines)
            guard UUID(uuidString: id) != nil else {
                throw BacklotError(
                    .invalidInput, "the folder's storage ID is not a UUID", context: storageIDPath,
                    hint:
                        "restore the file from a backup of the folder, or remove it if no database records this folder yet"
                )
            }
            return id.lowercased()
        }
        let id = UUID().uuidString.lowercased()
        do {
            let file = try AtomicFile(path: storageIDPath, overwrite: false, mode: 0o600)
            try file.descriptor.write(Array((id + "\n").utf8))
            try file.commit()
        } catch let e as BacklotError where e.code == .alreadyExists {
            return try storageID()  // another process made it first: theirs is the folder's
        }
        return id
    }

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
