import BacklotBasics
import BacklotStore
import Foundation

/// Leases: how several servers on one metadata database share work without a coordinator of
/// their own. A lease names its holder (``Repository/instanceID``, one per process) and when it
/// runs out (milliseconds since 1970 by the holder's clock; keep the servers' clocks in sync, as
/// NTP does, to well under ``Repository/leaseDuration``). A holder renews its lease while it
/// works; one that dies leaves a lease that another server takes once it has run out.
///
/// - Named leases (table `leases`, this type): the re-signing of catalogs.
/// - A version's lease (columns `lease_owner`, `lease_until` of `versions`, owned by ``Uploads``):
///   its upload while a request appends to a shared store, then its processing.
///
/// Each lease change is one conditional statement on its own (``MetadataDatabase/runAlone(_:_:)``):
/// atomic by itself, it needs no serialisable transaction and meets no serialization failure.
///
/// ```swift
/// if try repository.leases.acquire(Repository.resigningLease, for: 180) { try repository.publication.resign() }
/// repository.leases.release(Repository.resigningLease)
/// ```
public final class Leases: Sendable {
    let db: any MetadataDatabase
    /// This process's name in leases (``Repository/instanceID``).
    let instanceID: String

    init(db: any MetadataDatabase, instanceID: String) {
        self.db = db
        self.instanceID = instanceID
    }

    /// Takes or renews the named lease for `duration` seconds.
    ///
    /// ```swift
    /// if try repository.leases.acquire("catalog re-signing", for: 600) { try repository.publication.resign() }
    /// ```
    /// - Returns: whether this server holds it now (false while another's lease runs).
    /// - Throws: ``BacklotError/Code/unavailable`` when the database cannot be reached.
    public func acquire(_ name: String, for duration: TimeInterval) throws -> Bool {
        let now = Repository.nowMilliseconds()
        let until = now + Int64((duration * 1000).rounded())
        return try db.runAlone(
            """
            INSERT INTO leases(name, owner, until) VALUES (?, ?, ?)
            ON CONFLICT(name) DO UPDATE SET owner = excluded.owner, until = excluded.until
            WHERE leases.owner = excluded.owner OR leases.until < ?
            """, [.text(name), .text(instanceID), .integer(until), .integer(now)]) == 1
    }

    /// Gives up a named lease this server holds (at a graceful stop, so another takes over at once).
    public func release(_ name: String) {
        _ = try? db.runAlone("DELETE FROM leases WHERE name = ? AND owner = ?", [.text(name), .text(instanceID)])
    }

    /// Voids every named lease (a database that is this server's alone: leases an earlier process left).
    static func voidAll(_ tx: inout any MetadataConnection) throws {
        try tx.run("DELETE FROM leases")
    }
}
