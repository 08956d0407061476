import BacklotBasics
import BacklotStore
import Foundation

extension Repository {
    /// Where this repository keeps its archives (uploads and verified packs), as the metadata
    /// database records it: the data folder's storage ID (``RepositoryDirectory/storageID()``),
    /// or the bucket of a shared store. The published tree is not part of it: it is made from the
    /// metadata and the archives, and republished wherever it goes at start.
    func storageIdentity() throws -> (identity: String, description: String) {
        if archives.isShared { return ("bucket " + archives.location, archives.location) }
        let host = ProcessInfo.processInfo.hostName
        return ("folder " + (try directory.storageID()), "the data folder \(directory.path) on \(host)")
    }

    /// Records this repository's storage in the database the first time it is opened, and refuses
    /// a database that records another one: several servers may share one database only when they
    /// share its storage (a bucket, `--storage`), since what one wrote into its own folder is not
    /// in the other's. A database recorded with a data folder is that folder's alone.
    ///
    /// - Parameter adopting: replace the record with this storage (`backlot serve --adopt-storage`:
    ///   the storage was moved or copied to where this server finds it); audited as `storage.adopt`.
    /// - Throws: ``BacklotError/Code/conflict`` naming the storage the database records and what to do.
    func checkStorageRecord(adopting: Bool) throws {
        let (identity, description) = try storageIdentity()
        try db.transaction { tx in
            try tx.run(
                "INSERT INTO storage_record(id, identity, description, recorded, recorded_by) VALUES (1, ?, ?, ?, ?) ON CONFLICT(id) DO NOTHING",
                [.text(identity), .text(description), .integer(Self.now()), .text(instanceID)])
        }
        try db.transaction { tx in
            guard let row = try tx.query("SELECT identity, description FROM storage_record WHERE id = 1", []).first,
                let recorded = row["identity"]?.string, recorded != identity
            else { return }
            let other = row["description"]?.string ?? recorded
            guard adopting else {
                throw BacklotError(
                    .conflict,
                    "this database holds the metadata of a repository stored in \(other), not in \(description): what one server stores there is not in the other's storage",
                    context: db.displayName,
                    hint:
                        "servers that share a database must share their storage: give each the same --storage s3://BUCKET (docs/operations.md); if this storage replaced that one (it was moved or copied here), start once with --adopt-storage"
                )
            }
            try tx.run(
                "UPDATE storage_record SET identity = ?, description = ?, recorded = ?, recorded_by = ? WHERE id = 1",
                [.text(identity), .text(description), .integer(Self.now()), .text(instanceID)])
            try AuditLog.record(&tx, .storageAdopt, details: [.from: other, .to: description], system: true)
        }
    }
}
