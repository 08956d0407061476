import BacklotBasics
import BacklotContainer
import BacklotFormat
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Low disk space (Apple's 2022 talk: when the device lacks space, the system deletes finished
/// files left in its location): what the agent frees when the container's file system runs low.
extension ClientContainer {
    /// What ``reclaimSpace(minimumFree:)`` deleted.
    public enum Reclaimed: Sendable, Hashable {
        /// A finished URL download's file nobody had claimed: its outcome became a failure.
        case urlDownload(identifier: String, bytes: UInt64)
        /// An installed pack, neither essential nor in use: its status is "not downloaded" now,
        /// and the app's next `checkForUpdates()` names it among the removed packs.
        case pack(id: String, bytes: UInt64)
    }

    /// The free space under which the agent deletes (`BacklotMinimumFreeSpace`): 128 MiB.
    public static let defaultMinimumFreeSpace: UInt64 = 128 << 20

    /// Frees space while the container's file system has less than `minimumFree` bytes available,
    /// oldest first: finished URL downloads nobody claimed (their files wait in the hand-over
    /// folder; their outcomes become failures that say why), then installed packs that are not
    /// essential, that no process holds a file of open or mapped (``OpenFileTable``) and that no
    /// install is writing (their install lock is free). It stops as soon as there is enough.
    ///
    /// ```swift
    /// for item in try container.reclaimSpace(minimumFree: 128 << 20) { log("freed \(item)") }
    /// ```
    /// - Returns: what was deleted, in order (empty when there was space enough, or nothing to delete).
    public func reclaimSpace(minimumFree: UInt64) throws -> [Reclaimed] {
        func enough() -> Bool { (FileSystem.availableBytes(at: path) ?? UInt64.max) >= minimumFree }
        guard minimumFree > 0, !enough() else { return [] }
        var done: [Reclaimed] = []
        // 1. Finished files left for the app, under the exclusive lock (the app claims under it).
        // Re-entrant: a delegate already inside withExclusiveControl may call this.
        try ExclusiveControl.of(container: path).run {
            for outcome in try store.read({ try $0.urlOutcomes(in: .forApp) }) where !enough() {
                guard outcome.kind == "finished", outcome.staged == nil,
                    let file = outcome.path.flatMap(layout.handoverFile(recorded:)),
                    let name = ContainerLayout.recordedName(file),
                    let size = (try? FileSystem.linkStatus(file))??.size, !OpenFileTable.anyHeld(under: file),
                    let handover = try? layout.openDownloadFolders().handover
                else { continue }
                try store.transaction { tx in
                    try tx.markURLOutcomeFailed(
                        outcome.seq,
                        message:
                            "its file was deleted to free space: the device had less than \(minimumFree) bytes free (BacklotMinimumFreeSpace)"
                    )
                }
                // (a file that cannot be removed is not counted as freed)
                if (try? handover.removeFile(Array(name.utf8))) != nil {
                    done.append(.urlDownload(identifier: outcome.download.identifier, bytes: size))
                }
            }
        }
        // 2. Packs, the oldest installed first.
        let releases = try store.read { try $0.installedReleases() }.sorted {
            $0.installedAt != $1.installedAt
                ? $0.installedAt < $1.installedAt : Array($0.id.utf8).lexicographicallyPrecedes(Array($1.id.utf8))
        }
        for listed in releases where !enough() {
            guard let lock = try layout.acquire(.install(pack: listed.id), waiting: false) else { continue }
            defer { lock.release() }
            // Read again under the lock: an update may have replaced the release since the list was made.
            guard let release = try store.read({ try $0.installedRelease(listed.id) }),
                ReleaseName.isWellFormed(release.digest),  // a row the app wrote names no folder outside
                let (_, index) = PackInstaller.decodeStored(release.indexBytes, name: release.digest)
            else { continue }
            if case .essential = index.metadata.downloadPolicy { continue }
            let folder = releaseFolder(release.id, digest: release.digest)
            guard !OpenFileTable.anyHeld(under: folder) else { continue }
            let bytes = index.files.reduce(UInt64(0)) { CheckedInteger.saturatingAdd($0, $1.size) }
            try store.transaction { tx in
                try tx.deleteInstalled(release.id)
                var evicted = Self.decodeIDs(try tx.value(forKey: .evictedPacks))
                evicted.insert(release.id)
                try tx.setValue(Self.encodeIDs(evicted), forKey: .evictedPacks)
            }
            PackInstaller.removeRelease(folder)
            done.append(.pack(id: release.id, bytes: bytes))
        }
        return done
    }

    /// The packs deleted to free space since the last call, once (``AssetPackManager/checkForUpdates()``
    /// reports them as removed). A pack installed again since is left out.
    func takeEvictedPacks() throws -> Set<String> {
        try store.transaction { tx in
            let evicted = Self.decodeIDs(try tx.value(forKey: .evictedPacks))
            guard !evicted.isEmpty else { return [] }
            try tx.setValue("[]", forKey: .evictedPacks)
            return evicted.filter { (try? tx.installedRelease($0)) == nil }
        }
    }

    /// A set of pack IDs as a meta value holds it (a JSON array, sorted); nil or text of another shape is none.
    static func decodeIDs(_ text: String?) -> Set<String> {
        guard let text, let ids = try? JSONDecoder().decode([String].self, from: Data(text.utf8)) else { return [] }
        return Set(ids)
    }

    static func encodeIDs(_ ids: Set<String>) throws -> String {
        String(decoding: try JSONEncoder().encode(ids.sorted()), as: UTF8.self)
    }
}
