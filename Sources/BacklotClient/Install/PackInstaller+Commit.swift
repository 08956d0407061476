import BacklotBasics
import BacklotFormat
import BacklotProtocol
import Foundation

#if canImport(Glibc)
import Glibc
#endif

extension PackInstaller {
    /// Phase 4's end: every byte written came from a chunk that had its SHA-256 (and the index
    /// that lists the chunks of each file had the catalog's), and every file was checked and made
    /// read-only when its last chunk was written (``OpenFiles``): the linked and empty files are
    /// made read-only too, and the file system is flushed once.
    func finishAssembly(_ plan: InstallPlan, _ folder: PreparedFolder, files: OpenFiles) throws {
        for file in plan.index.files where file.chunks.isEmpty || folder.linked.contains(BytePath.Key(file.path)) {
            try folder.release.setModeBeneath(file.path, OpenFiles.installedMode(file.mode))
        }
        try files.syncAll(holding: folder.partial)
    }

    /// Phase 5: switches to the new release with one rename (readers see the old release until
    /// then), records it in the container, and removes the release it replaced and every attempt
    /// at another release that never finished.
    /// - Throws: what the rename and the container's database throw.
    func commit(
        id: String, release: Catalog.Release, _ assembled: AssembledRelease, previous: ClientContainer.Installed?
    ) throws {
        // The kept index is checked before the switch, and again as the database takes it, a
        // piece at a time (a change in between records nothing).
        var check = try StoredIndexReader(assembled.storedIndexFile, release: release)
        try check.check()
        try container.switchRelease(id, digest: assembled.digest, from: assembled.partial, replacing: previous) {
            var reader = try StoredIndexReader(assembled.storedIndexFile, release: release)
            try container.markInstalled(
                id: id, version: release.version, digest: assembled.digest,
                downloadSize: try CheckedInteger.convert(
                    release.archiveSize, to: Int.self, "the archive size", context: assembled.url),
                metadata: assembled.metadata, indexLength: reader.length
            ) { try reader.read(into: $0) }
        }
    }

    /// Splits stored header + index bytes of the release installed as `name` (``ReleaseName``),
    /// the index as that release installed it (its variant's files, docs/format.md §3.2).
    static func decodeStored(_ bytes: [UInt8], name: String) -> (header: PackHeader, index: PackIndex)? {
        guard bytes.count > PackHeader.size, let choice = ReleaseName.choice(name),
            let header = try? PackHeader.decode(Array(bytes.prefix(PackHeader.size)), fileSize: nil, source: "stored")
        else { return nil }
        guard
            let index = try? PackIndex.decode(Array(bytes.dropFirst(PackHeader.size)), header: header, source: "stored")
                .selecting(choice, source: "stored")
        else { return nil }
        return (header, index)
    }

    /// Removes a release folder whose files are read-only. Only folders are made writable: the
    /// files may be hard links shared with another release (or container), whose modes must stay.
    /// The folder is the app's to change while this runs: it is walked through descriptors, one
    /// name at a time, and a link met on the way is removed, never followed or changed
    /// (``DirectoryHandle/removeTree(_:makingFoldersWritable:)``).
    static func removeRelease(_ folder: String) {
        guard let slash = folder.lastIndex(of: "/"),
            let parent = try? DirectoryHandle(ownFolder: String(folder[..<slash]), creating: false)
        else { return }
        parent.removeTree(String(folder[folder.index(after: slash)...]), makingFoldersWritable: true)
    }
}
