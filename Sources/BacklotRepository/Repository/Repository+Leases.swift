import BacklotBasics
import BacklotStore
import Foundation

/// Leases: how several servers on one metadata database share work without a coordinator of
/// their own. A lease names its holder (``Repository/instanceID``, one per process) and when it
/// runs out (milliseconds since 1970 by the holder's clock; keep the servers' clocks in sync, as
/// NTP does, to well under ``Repository/leaseDuration``). A holder renews its lease while it
/// works; one that dies leaves a lease that another server takes once it has run out.
///
/// - A version's lease (columns `lease_owner`, `lease_until`): its upload while a request
///   appends to a shared store (held by that request: ``uploadLeaseOwner()``), then its
///   processing (held by the server).
/// - Named leases (table `leases`): the re-signing of catalogs.
///
/// Each lease change is one conditional statement on its own (``MetadataDatabase/runAlone(_:_:)``):
/// atomic by itself, it needs no serialisable transaction and meets no serialization failure.
extension Repository {
    /// Milliseconds since 1970, the unit of lease expiries.
    static func nowMilliseconds() -> Int64 { Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)) }

    /// When a lease taken or renewed now runs out.
    func leaseExpiry() -> Int64 { Self.nowMilliseconds() + Int64((leaseDuration * 1000).rounded()) }

    /// A holder name for one upload request: this server's, and a part of its own, so that two
    /// requests to one upload exclude each other on the same server too.
    func uploadLeaseOwner() -> String {
        var generator = SystemRandomNumberGenerator()
        return instanceID + "/upload-" + String(UInt64.random(in: 0...UInt64.max, using: &generator), radix: 36)
    }

    /// Takes the lease on a version in `state` for `owner` (by default this server), when nobody
    /// holds it, `owner` does, or its holder's lease ran out.
    /// - Returns: whether `owner` holds it now.
    func claimVersion(_ id: Int64, state: VersionState, owner: String? = nil) throws -> Bool {
        let owner = owner ?? instanceID
        return try db.runAlone(
            """
            UPDATE versions SET lease_owner = ?, lease_until = ?
            WHERE id = ? AND state = ? AND deleted = 0 AND (lease_owner IS NULL OR lease_owner = ? OR lease_until < ?)
            """,
            [
                .text(owner), .integer(leaseExpiry()), .integer(id), .text(state.rawValue), .text(owner),
                .integer(Self.nowMilliseconds()),
            ]) == 1
    }

    /// Renews `owner`'s (by default this server's) lease on a version.
    /// - Returns: false when it no longer holds it.
    func renewVersionLease(_ id: Int64, owner: String? = nil) throws -> Bool {
        try db.runAlone(
            "UPDATE versions SET lease_until = ? WHERE id = ? AND lease_owner = ?",
            [.integer(leaseExpiry()), .integer(id), .text(owner ?? instanceID)]) == 1
    }

    /// Gives up `owner`'s (by default this server's) lease on a version (in `state`, or in any
    /// state when nil); errors are ignored: an unreleased lease runs out by itself.
    func releaseVersionLease(_ id: Int64, state: VersionState?, owner: String? = nil) {
        _ = try? db.runAlone(
            "UPDATE versions SET lease_owner = NULL, lease_until = NULL WHERE id = ? AND lease_owner = ?"
                + (state == nil ? "" : " AND state = ?"),
            [.integer(id), .text(owner ?? instanceID)] + (state.map { [.text($0.rawValue)] } ?? []))
    }

    /// Takes or renews the named lease for `duration` seconds.
    ///
    /// ```swift
    /// if try repository.acquireLease("catalog re-signing", for: 600) { try repository.resign() }
    /// ```
    /// - Returns: whether this server holds it now (false while another's lease runs).
    /// - Throws: ``BacklotError/Code/unavailable`` when the database cannot be reached.
    public func acquireLease(_ name: String, for duration: TimeInterval) throws -> Bool {
        let now = Self.nowMilliseconds()
        let until = now + Int64((duration * 1000).rounded())
        return try db.runAlone(
            """
            INSERT INTO leases(name, owner, until) VALUES (?, ?, ?)
            ON CONFLICT(name) DO UPDATE SET owner = excluded.owner, until = excluded.until
            WHERE leases.owner = excluded.owner OR leases.until < ?
            """, [.text(name), .text(instanceID), .integer(until), .integer(now)]) == 1
    }

    /// Gives up a named lease this server holds (at a graceful stop, so another takes over at once).
    public func releaseLease(_ name: String) {
        _ = try? db.runAlone("DELETE FROM leases WHERE name = ? AND owner = ?", [.text(name), .text(instanceID)])
    }

    /// Schedules the processing of every uploaded version that nobody processes: no lease, or a
    /// lease that ran out (its server died). Each job claims its version first, so a version is
    /// processed by one server however many look at once.
    /// - Returns: how many versions were scheduled.
    @discardableResult
    public func takeOverAbandonedProcessing() throws -> Int {
        let rows = try db.read {
            try $0.query(
                """
                SELECT id, app FROM versions WHERE state = 'PROCESSING' AND deleted = 0 AND (lease_owner IS NULL OR lease_until < ?) ORDER BY id
                """, [.integer(Self.nowMilliseconds())])
        }
        var scheduled = 0
        for row in rows {
            guard let id = row["id"]?.int, let app = row["app"]?.string else { continue }
            scheduleProcessing(versionID: id, app: app)
            scheduled += 1
        }
        return scheduled
    }

    /// How long an upload may see no bytes before it is removed: seven days, in seconds.
    public static let defaultAbandonedUploadsAfter: TimeInterval = 604_800

    /// The named lease of the server that re-signs catalogs.
    public static let resigningLease = "catalog re-signing"

    /// One round of the work the servers of a repository share (`backlot serve` runs it every few
    /// seconds): processing that a server which died left is taken over, and — when `resigning`
    /// and this server holds (or takes) the re-signing lease — catalogs close to expiry are
    /// re-signed. The lease lasts three minutes: while any server runs, one of them re-signs.
    /// Uploads that saw no bytes for longer than `abandonedUploadsAfter` seconds are removed
    /// (``removeAbandonedUploads(olderThan:now:)``).
    ///
    /// ```swift
    /// try repository.shareWork(resigning: true, abandonedUploadsAfter: 3 * 86_400)
    /// ```
    /// - Throws: ``BacklotError/Code/unavailable`` when the database cannot be reached; what publishing throws.
    public func shareWork(
        resigning: Bool, abandonedUploadsAfter: TimeInterval = Repository.defaultAbandonedUploadsAfter
    ) throws {
        try takeOverAbandonedProcessing()
        try removeAbandonedUploads(olderThan: abandonedUploadsAfter)
        if resigning, try acquireLease(Self.resigningLease, for: 180) {
            try resign()
        }
    }
}
