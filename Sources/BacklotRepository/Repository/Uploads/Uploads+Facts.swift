import BacklotStore

/// What the other services read of versions (table `versions`, which only ``Uploads`` queries):
/// a few columns of the versions they name, and each pack's version count, so that no other
/// service's SQL joins the table.
extension Uploads {
    /// A version of a pack, as another service's row names it.
    struct VersionKey: Hashable {
        let pack: String
        let number: Int
    }

    /// The columns of a version other services read.
    struct VersionFacts {
        let state: String
        let format: String
        let archiveSHA256: String?
        let notes: String?
        let deleted: Bool
    }

    /// The facts of the versions of `app` that `keys` name (those that exist), read in batches
    /// of 100 keys in the caller's transaction.
    static func facts(
        _ tx: inout any MetadataConnection, app: String, of keys: some Sequence<VersionKey>
    ) throws -> [VersionKey: VersionFacts] {
        let wanted = Array(Set(keys))
        var found: [VersionKey: VersionFacts] = [:]
        var start = 0
        while start < wanted.count {
            let batch = wanted[start..<min(wanted.count, start + 100)]
            start = batch.endIndex
            var bindings: [Database.Value] = [.text(app)]
            for key in batch { bindings += [.text(key.pack), .integer(Int64(key.number))] }
            let rows = try tx.query(
                "SELECT pack, number, state, format, archive_sha256, notes, deleted FROM versions WHERE app = ? AND ("
                    + Array(repeating: "(pack = ? AND number = ?)", count: batch.count).joined(separator: " OR ")
                    + ")", bindings)
            for r in rows {
                guard let pack = r["pack"]?.string, let number = r["number"]?.integer(as: Int.self) else { continue }
                found[VersionKey(pack: pack, number: number)] = VersionFacts(
                    state: r["state"]?.string ?? "", format: r["format"]?.string ?? "",
                    archiveSHA256: r["archive_sha256"]?.string, notes: r["notes"]?.string,
                    deleted: (r["deleted"]?.int ?? 0) != 0)
            }
        }
        return found
    }

    /// Each pack of `app` that has versions not deleted: how many, and the newest one's number.
    static func versionCounts(
        _ tx: inout any MetadataConnection, app: String
    ) throws -> [String: (count: Int, latest: Int)] {
        var counts: [String: (count: Int, latest: Int)] = [:]
        for r in try tx.query(
            "SELECT pack, COUNT(number) AS n, MAX(number) AS latest FROM versions WHERE app = ? AND deleted = 0 GROUP BY pack",
            [.text(app)])
        {
            guard let pack = r["pack"]?.string, let n = r["n"]?.integer(as: Int.self),
                let latest = r["latest"]?.integer(as: Int.self)
            else { continue }
            counts[pack] = (n, latest)
        }
        return counts
    }

    /// A version of any app.
    struct AnyVersion: Hashable {
        let app: String
        let pack: String
        let number: Int
    }

    /// The pack digests of the versions kept (neither deleted nor failed, of every app), each
    /// with one version of it: what the deltas into a version stay published for
    /// (``Publication/collectDeltas()``). A version being processed counts with the digest it
    /// claimed (``claimPackDigest(_:app:pack:number:digest:)``). Read in the caller's transaction.
    static func keptPackDigests(_ tx: inout any MetadataConnection) throws -> [String: AnyVersion] {
        var kept: [String: AnyVersion] = [:]
        for r in try tx.query(
            "SELECT app, pack, number, index_sha256, claimed_digest FROM versions WHERE deleted = 0 AND state != 'FAILED'",
            [])
        {
            guard let app = r["app"]?.string, let pack = r["pack"]?.string,
                let number = r["number"]?.integer(as: Int.self)
            else { continue }
            for column in ["index_sha256", "claimed_digest"] {
                if let digest = r[column]?.string { kept[digest] = AnyVersion(app: app, pack: pack, number: number) }
            }
        }
        return kept
    }

    /// Records the pack digest of a version being processed as soon as its index is read, before
    /// the deltas into those bytes are looked at: garbage collection then keeps them for it
    /// (``keptPackDigests(_:)``), where `index_sha256` is set only once the version is `COMPLETE`.
    /// Nothing happens to a version that is no longer processed.
    static func claimPackDigest(
        _ tx: inout any MetadataConnection, app: String, pack: String, number: Int64, digest: String
    ) throws {
        try tx.run(
            "UPDATE versions SET claimed_digest = ? WHERE app = ? AND pack = ? AND number = ? AND state = 'PROCESSING'",
            [.text(digest), .text(app), .text(pack), .integer(number)])
    }
}
