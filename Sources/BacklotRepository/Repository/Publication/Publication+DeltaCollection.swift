import BacklotCrypto
import BacklotProtocol
import BacklotStore

/// The end of a delta's life. A delta, and the list naming the deltas into a pack digest, stay
/// published while some version of that pack digest is kept (not deleted, not failed), and go
/// with the last of them: a deleted version's content is then served by nothing, not even
/// rebuilt from the deltas into it, and deltas no longer take space. A delta *from* a deleted
/// version stays while the version it leads to is kept: devices still hold the base.
extension Publication {
    /// Removes the delta files and delta lists of the published tree that lead to no kept
    /// version, and their rows. Called by ``Uploads/collectGarbage()``, under the lock that
    /// ``publishDeltas(_:)`` is called under, so in one process the two never interleave.
    ///
    /// Across processes sharing a tree, the order makes it safe: a delta's row is recorded
    /// before its file is written, and the files are listed here before the rows are read, so a
    /// listed file has its row; a version being processed is kept, and its deltas' rows name it.
    /// A delta file without a row (written before deltas were recorded, schema step 11) is
    /// removed when no kept list names it, and recorded when one does.
    ///
    /// - Throws: what the metadata database and the tree's storage throw; what was removed
    ///   before stays removed, and the next collection finishes the rest.
    func collectDeltas() throws {
        // Listed before the rows are read (above).
        let names = try tree.fileNames(in: PublishedTreeLayout.deltasFolder)
        let read = try db.read { tx in
            (
                kept: try Uploads.keptVersions(&tx),
                rows: try tx.query("SELECT sha256, app, pack, version, target FROM published_deltas", [])
            )
        }
        var kept = read.kept
        let rows = read.rows
        // The pack digests that are kept: of a version processed, or of one being processed
        // (which its deltas' rows name: its own digest is recorded only once it is complete).
        for row in rows {
            guard let target = row["target"]?.string, let version = Self.version(of: row),
                kept.versions.contains(version)
            else { continue }
            kept.packDigests[target] = kept.packDigests[target] ?? version
        }
        var recorded: Set<String> = []
        var removed = 0
        for row in rows {
            guard let sha = row["sha256"]?.string else { continue }
            recorded.insert(sha)
            let isKept =
                if let target = row["target"]?.string {
                    kept.packDigests[target] != nil
                } else {
                    // A row made before targets were recorded whose version had none.
                    Self.version(of: row).map(kept.versions.contains) ?? false
                }
            guard !isKept else { continue }
            try tree.remove(PublishedTreeLayout.delta(sha256: sha).path)
            _ = try db.runAlone("DELETE FROM published_deltas WHERE sha256 = ?", [.text(sha)])
            removed += 1
        }
        var unrecorded: [String] = []
        var keptLists: [String] = []
        for name in names {
            switch PublishedTreeLayout(path: PublishedTreeLayout.deltasFolder + "/" + name) {
            case .delta(let sha)? where !recorded.contains(sha):
                unrecorded.append(sha)
            case .deltaList(let digest)? where kept.packDigests[digest] == nil:
                try tree.remove(PublishedTreeLayout.deltaList(packDigest: digest).path)
                removed += 1
            case .deltaList(let digest)?:
                keptLists.append(digest)
            default:
                continue
            }
        }
        if !unrecorded.isEmpty { removed += try collectUnrecorded(unrecorded, lists: keptLists, kept: kept) }
        if removed > 0 { log("collected \(removed) delta files and lists of versions no longer kept") }
    }

    /// Removes the delta files written before deltas were recorded that no kept list names, and
    /// records the others (so that they are looked for here once). Returns how many it removed.
    private func collectUnrecorded(
        _ unrecorded: [String], lists: [String], kept: Uploads.KeptVersions
    ) throws -> Int {
        var named: [String: String] = [:]
        for digest in lists {
            guard let target = SHA256Digest(hex: digest) else { continue }
            // A delta file is named by its SHA-256.
            for delta in try publishedDeltas(into: target) { named[delta.sha256.hex] = digest }
        }
        var removed = 0
        for sha in unrecorded {
            guard let target = named[sha], let version = kept.packDigests[target] else {
                try tree.remove(PublishedTreeLayout.delta(sha256: sha).path)
                removed += 1
                continue
            }
            _ = try db.runAlone(
                "INSERT INTO published_deltas(sha256, app, pack, version, target) VALUES (?, ?, ?, ?, ?) ON CONFLICT(sha256) DO NOTHING",
                [
                    .text(sha), .text(version.app), .text(version.pack), .integer(Int64(version.number)),
                    .text(target),
                ])
        }
        return removed
    }

    /// The version a row of `published_deltas` names.
    private static func version(of row: Database.Row) -> Uploads.KeptVersions.Version? {
        guard let app = row["app"]?.string, let pack = row["pack"]?.string,
            let number = row["version"]?.integer(as: Int.self)
        else { return nil }
        return Uploads.KeptVersions.Version(app: app, pack: pack, number: number)
    }
}
