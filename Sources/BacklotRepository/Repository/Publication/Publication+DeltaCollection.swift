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
    /// listed file has its row; a version being processed claims its pack digest before it
    /// reads the list of deltas into it, and again before it publishes its own
    /// (``Uploads/claimPackDigest(_:app:pack:number:digest:)``), so the deltas it will be
    /// released with are kept from then on.
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
                kept: try Uploads.keptPackDigests(&tx),
                rows: try tx.query("SELECT sha256, target FROM published_deltas", [])
            )
        }
        let kept = read.kept
        let rows = read.rows
        // Rows with a target: kept with it. A row without one (made before targets were
        // recorded, for a version that never got a pack digest) is looked for in the kept lists,
        // as a file without a row is.
        var recorded: Set<String> = []
        var removed = 0
        for row in rows {
            guard let sha = row["sha256"]?.string, let target = row["target"]?.string else { continue }
            recorded.insert(sha)
            guard kept[target] == nil else { continue }
            try tree.remove(PublishedTreeLayout.delta(sha256: sha).path)
            _ = try db.runAlone(
                "DELETE FROM published_deltas WHERE sha256 = ? AND target = ?", [.text(sha), .text(target)])
            removed += 1
        }
        let untargeted = Set(rows.compactMap { $0["target"]?.string == nil ? $0["sha256"]?.string : nil })
        var unrecorded: [String] = []
        var keptLists: [String] = []
        for name in names {
            switch PublishedTreeLayout(path: PublishedTreeLayout.deltasFolder + "/" + name) {
            case .delta(let sha)? where !recorded.contains(sha):
                unrecorded.append(sha)
            case .deltaList(let digest)? where kept[digest] == nil:
                try tree.remove(PublishedTreeLayout.deltaList(packDigest: digest).path)
                removed += 1
            case .deltaList(let digest)?:
                keptLists.append(digest)
            default:
                continue
            }
        }
        // A row without a target whose file is gone names nothing.
        let listedNames = Set(names)
        for sha in untargeted where !listedNames.contains("\(sha).delta") {
            _ = try db.runAlone("DELETE FROM published_deltas WHERE sha256 = ? AND target IS NULL", [.text(sha)])
        }
        if !unrecorded.isEmpty { removed += try collectUnrecorded(unrecorded, lists: keptLists, kept: kept) }
        if removed > 0 { log("collected \(removed) delta files and lists of versions no longer kept") }
    }

    /// Removes the delta files without a recorded target (written before deltas were recorded,
    /// or recorded before targets were) that no kept list names, with their rows, and records
    /// the others with the list's digest (so that they are looked for here once). Returns how
    /// many it removed.
    private func collectUnrecorded(
        _ unrecorded: [String], lists: [String], kept: [String: Uploads.AnyVersion]
    ) throws -> Int {
        var named: [String: String] = [:]
        for digest in lists {
            guard let target = SHA256Digest(hex: digest) else { continue }
            // A delta file is named by its SHA-256.
            for delta in try publishedDeltas(into: target) { named[delta.sha256.hex] = digest }
        }
        var removed = 0
        for sha in unrecorded {
            guard let target = named[sha], let version = kept[target] else {
                try tree.remove(PublishedTreeLayout.delta(sha256: sha).path)
                _ = try db.runAlone("DELETE FROM published_deltas WHERE sha256 = ? AND target IS NULL", [.text(sha)])
                removed += 1
                continue
            }
            try recordDelta(
                sha, leadingTo: target, app: version.app, pack: version.pack, number: Int64(version.number),
                replacing: false)
        }
        return removed
    }
}
