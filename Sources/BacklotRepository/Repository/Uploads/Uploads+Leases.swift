import BacklotBasics
import BacklotProtocol
import BacklotStore
import Foundation

/// A version's lease (columns `lease_owner`, `lease_until`): its upload while a request appends to
/// a shared store (held by that request: ``uploadLeaseOwner()``), then its processing (held by the
/// server). See ``Leases`` for how leases work.
extension Uploads {
    /// When a lease taken or renewed now runs out.
    func leaseExpiry() -> Int64 { Repository.nowMilliseconds() + Int64((leaseDuration * 1000).rounded()) }

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
                .integer(Repository.nowMilliseconds()),
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

    /// Voids every version's lease (a database that is this server's alone: leases an earlier process left).
    static func voidLeases(_ tx: inout any MetadataConnection) throws {
        try tx.run("UPDATE versions SET lease_owner = NULL, lease_until = NULL WHERE lease_owner IS NOT NULL")
    }
}
