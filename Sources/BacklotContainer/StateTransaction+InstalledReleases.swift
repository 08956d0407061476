import BacklotBasics
import BacklotStore

/// The `installed` table (one release per pack) and `chunks_done` (the chunks of a release being
/// assembled that are already in place, so that an interrupted install resumes).
extension StateTransaction {
    /// Every installed release, by pack ID.
    public func installedReleases() throws -> [InstalledRelease] {
        try connection.query("SELECT * FROM installed ORDER BY id").compactMap(Self.installedRelease)
    }

    /// Each installed release's pack ID and digest, without their indexes: what tells that the
    /// installed releases changed, at the cost of a few bytes a pack.
    public func installedReleaseNames() throws -> [(id: String, digest: String)] {
        try connection.query("SELECT id, digest FROM installed ORDER BY id").compactMap { r in
            guard let id = r["id"]?.string, let digest = r["digest"]?.string else { return nil }
            return (id, digest)
        }
    }

    /// The installed release of pack `id`, if any.
    public func installedRelease(_ id: String) throws -> InstalledRelease? {
        try connection.query("SELECT * FROM installed WHERE id = ?", [.text(id)]).first.flatMap(Self.installedRelease)
    }

    /// Records `release` as its pack's installed one, and forgets its resumable chunks.
    public func recordInstalled(_ release: InstalledRelease) throws {
        var at = 0
        try recordInstalled(release, indexLength: release.indexBytes.count) { room in
            let n = min(room.count, release.indexBytes.count - at)
            release.indexBytes[at..<at + n].withUnsafeBytes { room.copyMemory(from: $0) }
            at += n
            return n
        }
    }

    /// Records `release` as its pack's installed one, and forgets its resumable chunks, with the
    /// release's index (`indexLength` bytes) written into the database by `fill`, a piece at a
    /// time (``Database/Connection/writeBlob(table:column:rowid:fill:)``), rather than taken from
    /// `release.indexBytes`, which is not used: a release of 200,000 files has a 12 MB index, which
    /// is then never whole in memory.
    /// - Throws: what SQLite and `fill` throw (the transaction then records nothing).
    public func recordInstalled(
        _ release: InstalledRelease, indexLength: Int, fill: (UnsafeMutableRawBufferPointer) throws -> Int
    ) throws {
        try connection.run(
            """
            INSERT INTO installed(id, version, digest, download_size, metadata, index_bytes, installed) VALUES (?, ?, ?, ?, ?, zeroblob(?), ?)
            ON CONFLICT(id) DO UPDATE SET version = excluded.version, digest = excluded.digest, download_size = excluded.download_size,
            metadata = excluded.metadata, index_bytes = excluded.index_bytes, installed = excluded.installed
            """,
            [
                .text(release.id), .integer(release.version), .text(release.digest), .integer(release.downloadSize),
                .text(release.metadata), .integer(Int64(indexLength)), .integer(release.installedAt),
            ])
        let row = try connection.query("SELECT rowid FROM installed WHERE id = ?", [.text(release.id)]).first
        guard let rowid = row?["rowid"]?.int else {
            throw BacklotError(.io, "the installed release of \(release.id) was not recorded")
        }
        try connection.writeBlob(table: "installed", column: "index_bytes", rowid: rowid, fill: fill)
        try connection.run("DELETE FROM chunks_done WHERE digest = ?", [.text(release.digest)])
    }

    /// Forgets pack `id`'s installed release.
    public func deleteInstalled(_ id: String) throws {
        try connection.run("DELETE FROM installed WHERE id = ?", [.text(id)])
    }

    /// The chunks of release `digest` already in place.
    public func doneChunks(_ digest: String) throws -> [Int64] {
        try connection.query("SELECT chunk FROM chunks_done WHERE digest = ?", [.text(digest)]).compactMap {
            $0["chunk"]?.int
        }
    }

    /// Records chunks of release `digest` as in place.
    public func recordDoneChunks(_ digest: String, _ chunks: [Int64]) throws {
        guard !chunks.isEmpty else { return }
        // One statement for the lot (a JSON array of the numbers), not one prepared and run per
        // chunk: a release of 50,000 small chunks records them all.
        try connection.run(
            "INSERT OR IGNORE INTO chunks_done(digest, chunk) SELECT ?, value FROM json_each(?)",
            [.text(digest), .text("[" + chunks.map(String.init).joined(separator: ",") + "]")])
    }

    /// A row read back (another process may have written it): a row of the wrong shape is skipped.
    static func installedRelease(_ r: Database.Row) -> InstalledRelease? {
        guard let id = r["id"]?.string, let digest = r["digest"]?.string else { return nil }
        return InstalledRelease(
            id: id, version: r["version"]?.int ?? 0, digest: digest, downloadSize: r["download_size"]?.int ?? 0,
            metadata: r["metadata"]?.string ?? "{}",
            indexBytes: { if case .blob(let b)? = r["index_bytes"] { b } else { [] } }(),
            installedAt: r["installed"]?.int ?? 0)
    }
}
