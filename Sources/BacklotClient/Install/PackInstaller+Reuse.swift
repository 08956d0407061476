import BacklotBasics
import BacklotCrypto
import BacklotFormat
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Phase 2 of an install: the folder the release is assembled in, and what it takes from the
/// installed release.
struct PreparedFolder {
    /// The folder the release is assembled in until it is committed (``ClientContainer/switchRelease(_:digest:from:replacing:record:)``
    /// renames it to the release's folder).
    let partial: String
    /// ``partial``, open: what is made in it is made beneath it through no link
    /// (``DirectoryHandle``'s `Beneath` methods), as the app can change the folder meanwhile.
    let release: DirectoryHandle
    /// Files hard-linked, unchanged, from the installed release (by path, as bytes).
    let linked: Set<BytePath.Key>
    /// Where the installed release holds each chunk it has: a file, an offset, a size.
    let localChunks: [SHA256Digest: (path: String, offset: UInt64, size: Int)]
    /// Where each chunk of the files not linked goes.
    let placements: ChunkPlacements
}

/// Phase 2's verdict on each chunk that must be written: reused, rebuilt from a delta, or fetched.
struct ChunkSources {
    /// Chunks to fetch from the archive, by number, sorted.
    var missing: [Int] = []
    /// Chunks a delta can rebuild from local chunks.
    var viaDelta: [(chunk: Int, id: SHA256Digest, entry: Int)] = []
    /// Chunks taken from the installed release.
    var reused = 0
}

extension PackInstaller {
    /// Phase 2a: makes `RELEASE.partial` (keeping what an earlier attempt left only where it cannot
    /// mislead this one), its folders and empty files, links the files that did not change from
    /// the installed release (each re-hashed first), and checks there is room for the rest.
    /// - Throws: ``BacklotError/Code/io`` when the disk lacks room; what the file system throws.
    func prepareFolder(id: String, _ plan: InstallPlan, previous: ClientContainer.Installed?) throws -> PreparedFolder {
        let index = plan.index
        let folder = container.releaseFolder(id, digest: plan.digest)
        let partial = folder + ".partial"
        try FileSystem.makeDirectories(container.packFolder(id))  // (the partial folder: by sanitize)
        // Chunks found there are re-hashed before use, but links, special files and hard links (a
        // file shared with a release, which writing would damage) are removed, and linked files are
        // linked again.
        let release = try Self.sanitize(partial)
        // Paths are byte strings (BytePath): an NFC and an NFD name are two files, never one.
        var oldFiles: [BytePath.Key: PackIndex.File] = [:]
        var localChunks: [SHA256Digest: (path: String, offset: UInt64, size: Int)] = [:]
        if let previous, let old = Self.decodeStored(previous.indexBytes, name: previous.digest) {
            let oldFolder = container.releaseFolder(id, digest: previous.digest)
            for file in old.index.files {
                oldFiles[BytePath.Key(file.path)] = file
                var offset: UInt64 = 0
                for c in file.chunks {
                    let chunk = old.index.chunks[c]
                    if localChunks[chunk.id] == nil {
                        localChunks[chunk.id] = (oldFolder + "/" + file.path, offset, Int(chunk.uncompressedSize))
                    }
                    offset += UInt64(chunk.uncompressedSize)
                }
            }
        }
        var linked = Set<BytePath.Key>()
        var needed: UInt64 = 0
        var madeFolders = Set<BytePath.Key>()
        for file in index.files {
            for dir in BytePath.ancestors(of: file.path) where madeFolders.insert(BytePath.Key(dir)).inserted {
                try release.makeFolderBeneath(dir)
            }
            if let old = oldFiles[BytePath.Key(file.path)], old.digest == file.digest, let previous {
                let source = container.releaseFolder(id, digest: previous.digest) + "/" + file.path
                // An unchanged file is linked only if it is still intact (installed files may have
                // been altered, or replaced by a link), and what is linked is that very file.
                if Self.linkVerified(source, to: file.path, in: release, digest: file.digest) {
                    linked.insert(BytePath.Key(file.path))
                    continue
                }
            }
            needed += file.size
            // Files with content are created by the first write of one of their chunks
            // (OpenFiles), so a file costs one open, not two; an empty file has no chunk, and
            // its digest must be that of no bytes.
            guard file.chunks.isEmpty else { continue }
            try file.check(SHA256.hash([]), source: plan.url)
            let fd = release.openBeneath(file.path, flags: O_WRONLY | O_CREAT | O_TRUNC, mode: 0o644)
            guard fd >= 0 else { throw SystemCall.error("create", path: partial + "/" + file.path) }
            close(fd)
        }
        if let free = FileSystem.availableBytes(at: partial), free < needed {
            throw BacklotError(
                .io, "installing \(id) needs \(needed) bytes but only \(free) are free", context: container.path,
                hint: "free some disk space")
        }
        // Where each chunk goes: (file number, offset), grouped by chunk, for the files not linked.
        let placements = ChunkPlacements(index: index) { !linked.contains(BytePath.Key(index.files[$0].path)) }
        return PreparedFolder(
            partial: partial, release: release, linked: linked, localChunks: localChunks, placements: placements)
    }

    /// Phase 2b: writes every chunk that need not be fetched — one recorded as written before a
    /// crash and still intact in the folder, or one the installed release has (re-hashed) — and
    /// sorts the others into those a delta can rebuild and those to fetch.
    /// - Throws: what writing the release throws (``OpenFiles/account(_:writing:)``) and the
    ///   container's database.
    func reuseChunks(_ plan: InstallPlan, _ folder: PreparedFolder, files: OpenFiles) throws -> ChunkSources {
        let index = plan.index
        let placements = folder.placements
        let finished = try container.doneChunks(plan.digest)
        var sources = ChunkSources()
        var recorded: [Int] = []
        for c in 0..<placements.chunkCount where !placements[c].isEmpty {
            let chunk = index.chunks[c]
            let places = placements[c]
            if finished.contains(c),
                let bytes = try? Self.read(
                    files.path(of: places.first!.file), places.first!.offset, Int(chunk.uncompressedSize)),
                SHA256.hash(bytes) == chunk.id
            {
                for p in places { try files.account(p, writing: p == places.first! ? nil : bytes) }
                continue
            }
            if let local = folder.localChunks[chunk.id],
                let bytes = try? Self.read(local.path, local.offset, local.size),
                SHA256.hash(bytes) == chunk.id
            {
                for p in places { try files.account(p, writing: bytes) }
                sources.reused += 1
                recorded.append(c)
                continue
            }
            if let delta = plan.delta, let e = delta.entryOf[chunk.id],
                delta.entries[e].targets.contains(PackDelta.Target(id: chunk.id, size: chunk.uncompressedSize)),
                delta.entries[e].bases.allSatisfy({ folder.localChunks[$0] != nil })
            {
                sources.viaDelta.append((c, chunk.id, e))
                continue
            }
            sources.missing.append(c)
        }
        try container.recordChunks(plan.digest, recorded)
        return sources
    }

    /// Removes from an earlier attempt's folder everything but folders and regular files with a
    /// single name (no links, no special files, no hard links shared with another release).
    ///
    /// The folder is in the container, which the app can change while this runs: it is walked
    /// through descriptors (each folder opened refusing a link), and modes are set with
    /// `AT_SYMLINK_NOFOLLOW`, so a link swapped in after a name was looked at is neither followed
    /// nor changed. A tree more than ``DirectoryHandle/removalDepth`` folders deep (no pack's
    /// is) is refused.
    /// - Returns: the folder, open (what the install makes in it is made through this).
    @discardableResult
    static func sanitize(_ folder: String) throws -> DirectoryHandle {
        // The folder itself may have been replaced by a link or a file: that is removed (never
        // followed) and the folder made again, empty.
        if let found = try FileSystem.linkStatus(folder), found.kind != .directory, unlink(folder) != 0 {
            throw SystemCall.error("remove", path: folder)
        }
        let handle = try DirectoryHandle(ownFolder: folder)
        try sanitize(handle, depth: 0)
        return handle
    }

    private static func sanitize(_ folder: DirectoryHandle, depth: Int) throws {
        guard depth < DirectoryHandle.removalDepth else {
            throw BacklotError(
                .io,
                "an earlier attempt's folder is nested more than \(DirectoryHandle.removalDepth) folders deep",
                context: folder.path, hint: "remove the folder: the install starts again")
        }
        for (name, found) in try folder.entries() {
            guard let st = found else { continue }
            switch st.kind {
            case .directory:
                if st.mode & 0o700 != 0o700 { try folder.setMode(name, 0o755) }
                try sanitize(try folder.openFolder(name), depth: depth + 1)
            case .regular where st.linkCount == 1:
                // A file finished (and made read-only) before the crash is written again only if
                // its chunks were not all recorded: it must be writable for that.
                if st.mode & 0o200 == 0 { try folder.setMode(name, 0o644) }
            default:
                try folder.removeFile(name)
            }
        }
    }

    /// Hard-links `source` (a regular file, never through a link) to `target` beneath `release`
    /// (through no link) when its SHA-256 is `digest`, replacing whatever `target` was; true when
    /// `target` is then that same file.
    static func linkVerified(
        _ source: String, to target: String, in release: DirectoryHandle, digest: SHA256Digest
    ) -> Bool {
        let fd = open(source, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard fd >= 0 else { return false }
        let descriptor = FileDescriptor(rawValue: fd, path: source)
        defer { descriptor.close() }
        guard let st = try? FileSystem.status(of: descriptor), st.kind == .regular,
            (try? SHA256.hash(descriptor: descriptor)) == digest
        else { return false }
        if let existing = release.linkStatusBeneath(target) {
            if existing.kind == .regular, existing.isSameFile(as: st) { return true }
            guard (try? release.removeFileBeneath(target)) != nil else { return false }
        }
        guard (try? release.linkBeneath(from: source, as: target)) != nil, let made = release.linkStatusBeneath(target)
        else { return false }
        return made.kind == .regular && made.isSameFile(as: st)
    }

    static func read(_ path: String, _ offset: UInt64, _ count: Int) throws -> [UInt8] {
        let fd = try FileDescriptor.openForReading(path)
        defer { fd.close() }
        return try fd.read(count: count, at: offset)
    }
}
