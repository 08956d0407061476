import BacklotBasics
import BacklotContainer
import BacklotCrypto
import BacklotFormat
import BacklotProtocol
import Foundation

#if canImport(Glibc)
import Glibc
#endif

extension ClientContainer {
    /// Whether the container was marked as an App Clip's (by a manager configured so): essential
    /// downloads are refused and installation events skip essential packs, in every process.
    public var isMarkedAppClip: Bool { (try? meta(.isAppClip)) == "1" }

    func markAppClip() throws {
        if !isMarkedAppClip { try setMeta(.isAppClip, "1") }
    }

    /// How many chunks of the release with this index digest are verified and written so far
    /// (for an install in progress, or one interrupted; 0 once it is installed).
    public func verifiedChunkCount(forDigest digest: String) -> Int {
        (try? doneChunks(digest).count) ?? 0
    }

    /// Whether a background agent runs for the container (it holds `DIR/.agent.lock`).
    public var isAgentRunning: Bool { layout.isHeld(.agent) }

    /// The last catalog this container verified, verified again (signature by the keys that were
    /// trusted then, app and channel, expiry).
    /// - Returns: nil when the container never verified a catalog.
    /// - Throws: ``BacklotError/Code/untrusted`` when it no longer verifies (it expired, or the
    ///   stored copy was altered).
    public func lastVerifiedCatalog(now: Date = Date()) throws -> Catalog? {
        guard let text = try meta(.catalogEnvelope), let envelope = Data(base64Encoded: text),
            let keyText = try meta(.catalogKeys), let target = try meta(.catalogFor)
        else { return nil }
        let keys = try keyText.split(separator: ",").map { part -> Ed25519.PublicKey in
            guard let raw = Data(base64Encoded: String(part)) else {
                throw BacklotError(
                    .untrusted, "the container's stored catalog keys are damaged", context: layout.stateDatabase)
            }
            return try Ed25519.PublicKey(rawRepresentation: Array(raw))
        }
        let parts = target.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 2, let channel = Channel(rawValue: parts[1]) else {
            throw BacklotError(
                .untrusted, "the container's stored catalog target is damaged", context: layout.stateDatabase)
        }
        return try Catalog.verify(
            Array(envelope), trusting: keys, app: parts[0], channel: channel, now: now,
            source: path + " (stored catalog)")
    }

    /// Installs a release that `source` has installed into this container. When `moving`, its files
    /// are hard-linked (copied across file systems) and the source's copy is removed afterwards;
    /// otherwise they are copied, so that the two containers never share an inode (writing
    /// through one copy can't damage the other). Each must be a regular file of the size its index
    /// lists (compared first, so a file of the wrong size is refused without reading it) and with
    /// the SHA-256 it lists once in place, before the release becomes visible with one rename, as a
    /// download's would. The installed files are read-only (0444, or 0555 for executables), as
    /// installed packs are.
    /// - Parameter moving: remove it from `source` once it is installed here (and hard-link);
    ///   false: copy, and leave the source's copy in place.
    /// - Throws: ``BacklotError/Code/corruptArchive`` when a file of the source is damaged, missing
    ///   or not a regular file (nothing is installed).
    public func adopt(_ release: Installed, from source: ClientContainer, moving: Bool) throws {
        guard let (_, index) = PackInstaller.decodeStored(release.indexBytes, name: release.digest),
            SHA256.hash(Array(release.indexBytes.dropFirst(PackHeader.size))).hex
                == ReleaseName.indexDigest(release.digest)
        else {
            throw BacklotError(.corruptArchive, "the stored index of \(release.id) is damaged", context: source.path)
        }
        // The source (an App Clip's container) is another program's: its release's name is one
        // folder's name, and that folder is its own, reached through no link (one to this
        // container's packs would have the move below remove this container's files), checked
        // again before it is removed.
        guard !release.digest.isEmpty, !release.digest.contains("/"), release.digest != ".", release.digest != ".."
        else {
            throw BacklotError(
                .untrusted, "the release name \(release.digest) of \(release.id) is not a folder's name",
                context: source.path)
        }
        let from = source.releaseFolder(release.id, digest: release.digest)
        try source.checkNoLink(to: from)
        let folder = releaseFolder(release.id, digest: release.digest)
        let partial = folder + ".partial"
        try source.layout.holding(.install(pack: release.id)) {
            try layout.holding(.install(pack: release.id)) {
                if try installed(release.id)?.digest == release.digest { return }
                if FileSystem.exists(partial) { PackInstaller.removeRelease(partial) }
                try FileSystem.makeDirectories(partial)
                do {
                    for file in index.files {
                        let src = from + "/" + file.path
                        let dst = partial + "/" + file.path
                        func damaged(_ what: String = "is damaged or missing") -> BacklotError {
                            BacklotError(
                                .corruptArchive, "\(file.path) \(what) in the source container", context: source.path,
                                hint:
                                    "run backlot verify --container \(source.path) --repair, or let the app download the pack"
                            )
                        }
                        // Never a link out of the source's tree: only a regular file is linked.
                        // Sizes first: a file of another size (a 20 GB sparse file, say) is refused without reading it.
                        guard let status = try? FileSystem.linkStatus(src), status.kind == .regular else {
                            throw damaged()
                        }
                        guard status.size == file.size else {
                            throw damaged("has \(status.size) bytes, not the \(file.size) its index lists,")
                        }
                        for dir in BytePath.ancestors(of: file.path) {
                            try FileSystem.makeDirectory(partial + "/" + dir)
                        }
                        if !moving || link(src, dst) != 0 {
                            guard !moving || errno == EXDEV else { throw SystemCall.error("link", path: dst) }
                            try Self.copyFile(src, to: dst)
                        }
                        // Through the file opened without following a link: the source swapped for a
                        // link after its check makes `link` link that link, whose target a `chmod` by
                        // path would change.
                        do {
                            try FileSystem.setMode(dst, file.mode == 0o755 ? 0o555 : 0o444)
                        } catch {
                            throw damaged("is not a regular file")
                        }
                        // Checked where it now is, so a change to the source after the check cannot slip in.
                        guard let placed = try? FileSystem.linkStatus(dst), placed.kind == .regular,
                            placed.size == file.size,
                            (try? SHA256.hash(fileAt: dst)) == file.digest
                        else { throw damaged() }
                    }
                    FileSystem.syncDirectory(partial)
                    try switchRelease(
                        release.id, digest: release.digest, from: partial, replacing: try installed(release.id)
                    ) {
                        try markInstalled(
                            id: release.id, version: release.version, digest: release.digest,
                            downloadSize: release.downloadSize, metadata: release.metadata,
                            indexBytes: release.indexBytes)
                    }
                } catch {
                    PackInstaller.removeRelease(partial)
                    throw error
                }
            }
        }
        if moving {
            // Exactly the folder checked, and the source's record of it only if it still names it
            // (the source's database is its own to change meanwhile).
            try source.checkNoLink(to: from)
            if try source.installed(release.id)?.digest == release.digest { try source.removeInstalled(release.id) }
            PackInstaller.removeRelease(from)
        }
    }

    /// Checks that `folder`, beneath the container, is reached through no symbolic link: its
    /// resolved path is the container's own resolved path followed by the same names.
    /// - Throws: ``BacklotError/Code/untrusted`` naming the folder otherwise.
    func checkNoLink(to folder: String) throws {
        guard folder.hasPrefix(path + "/"), let root = FileSystem.realPath(path),
            FileSystem.realPath(folder) == root + folder.dropFirst(path.count)
        else {
            throw BacklotError(
                .untrusted, "\(folder) is reached through a symbolic link, not the container's own folder",
                context: path, hint: "the container was altered: nothing of it is used or removed")
        }
    }

    /// Copies a regular file (a new inode, never a link), synced to disk.
    static func copyFile(_ src: String, to dst: String) throws {
        let input = open(src, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard input >= 0 else { throw SystemCall.error("open", path: src) }
        defer { close(input) }
        let output = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard output >= 0 else { throw SystemCall.error("open", path: dst) }
        defer { close(output) }
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(input, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw SystemCall.error("read", path: src)
            }
            if n == 0 { break }
            var written = 0
            while written < n {
                let w = buffer.withUnsafeBytes { write(output, $0.baseAddress! + written, n - written) }
                if w < 0 {
                    if errno == EINTR { continue }
                    throw SystemCall.error("write", path: dst)
                }
                written += w
            }
        }
        guard fsync(output) == 0 else { throw SystemCall.error("fsync", path: dst) }
    }
}
