import BacklotBasics
import BacklotProtocol
import BacklotStore
import Foundation

/// The end of a version's life: its deletion, and the garbage collection of the archives and
/// uploads no retained version uses.
extension Uploads {
    /// Deletes a version that no channel uses; its blob goes at the next garbage collection. A
    /// version being processed stops processing (the deletion does not wait for it).
    public func deleteVersion(app: String, pack: String, number: Int) throws {
        let id: Int64? = try db.transaction { tx in
            if let channel = try Releases.channelUsing(&tx, app: app, pack: pack, number: number) {
                throw BacklotError(
                    .conflict, "the version is released on \(channel)", context: "\(app)/\(pack)/\(number)",
                    hint: "roll the channel back to another version or withdraw the pack first")
            }
            let id = try tx.query(
                "SELECT id FROM versions WHERE app = ? AND pack = ? AND number = ? AND deleted = 0",
                [.text(app), .text(pack), .integer(Int64(number))]
            ).first?["id"]?.int
            // A version being processed is FAILED at once; its processing is stopped below.
            guard
                try tx.run(
                    """
                    UPDATE versions SET deleted = 1,
                        reason = CASE WHEN state = 'PROCESSING' THEN 'deleted while it was being processed' ELSE reason END,
                        state = CASE WHEN state = 'PROCESSING' THEN 'FAILED' ELSE state END
                    WHERE app = ? AND pack = ? AND number = ? AND deleted = 0
                    """,
                    [.text(app), .text(pack), .integer(Int64(number))]) == 1
            else {
                throw BacklotError(.notFound, "no version \(number) of this pack", context: "\(app)/\(pack)")
            }
            try AuditLog.record(&tx, .versionDelete, app: app, pack: pack, version: number)
            return id
        }
        if let id { scheduler.cancel(versionID: id) }
        try collectGarbage()
    }

    /// Removes blobs, published archives and deltas that no retained version references. Runs under the
    /// blob lock, so that a blob being stored is never taken for garbage (and never waits for processing).
    public func collectGarbage() throws {
        try blobLock.withLock { _ in try collectGarbageNow() }
    }

    private func collectGarbageNow() throws {
        // Listed before the live set is read: a blob stored meanwhile (by any server) had its
        // SHA-256 recorded before it was stored, so it is either not listed here or live below.
        let blobs = try archives.blobNames()
        let packs = try tree.fileNames(in: PublishedTreeLayout.packsFolder).compactMap {
            PublishedTreeLayout(path: PublishedTreeLayout.packsFolder + "/" + $0)?.contentAddress
        }
        let live = Set(
            try db.read {
                try $0.query("SELECT archive_sha256 FROM versions WHERE deleted = 0 AND archive_sha256 IS NOT NULL")
            }
            .compactMap { $0["archive_sha256"]?.string })
        for sha in blobs where !live.contains(sha) { try archives.removeBlob(sha) }
        for sha in packs where !live.contains(sha) { try tree.remove(PublishedTreeLayout.pack(sha256: sha).path) }
        // Uploads of deleted and failed versions. In a bucket, each is cleaned once (its row then says nothing is left).
        let dead = "((deleted = 1 AND state != 'PROCESSING') OR state = 'FAILED')"
        let rows = try db.read {
            try $0.query(
                "SELECT * FROM versions WHERE \(dead)"
                    + (archives.isShared ? " AND (upload_id IS NOT NULL OR received > 0)" : ""))
        }
        for row in rows {
            let upload = uploadRecord(row)
            try archives.removeUpload(upload)
            if archives.isShared {
                try db.transaction { tx in
                    try tx.run(
                        "UPDATE versions SET upload_id = NULL, received = 0 WHERE id = ? AND \(dead)",
                        [.integer(upload.versionID)])
                }
            }
        }
        // The deltas into versions no longer kept, last: a failure there leaves the rest done.
        try publication.collectDeltas()
    }
}
