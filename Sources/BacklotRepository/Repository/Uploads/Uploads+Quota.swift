import BacklotBasics
import BacklotProtocol
import BacklotStore
import Foundation

/// The per-app quota (Apple's rule), checked when a version is created and when its upload ends.
extension Uploads {
    /// Apple's quota rule: per pack, the largest retained version; summed over the app's packs.
    /// A version still awaiting its upload counts the bytes stored so far, not the size it
    /// declared: a declaration reserves nothing (else one token could hold an app's whole quota
    /// by declaring it and sending nothing), and the check is made again when the last byte
    /// arrives (``uploadFinished(versionID:)``), where `replacing` is that version at its size.
    func quotaUse(
        _ tx: inout any MetadataConnection, app: String, replacing: (pack: String, size: UInt64)
    ) throws -> UInt64 {
        let rows = try tx.query(
            "SELECT * FROM versions WHERE app = ? AND deleted = 0 AND state != 'FAILED'", [.text(app)])
        var largest: [String: UInt64] = [replacing.pack: replacing.size]
        for row in rows {
            let pack = row["pack"]?.string ?? ""
            let bytes =
                row["state"]?.string == VersionState.awaitingUpload.rawValue
                ? archives.receivedBytes(uploadRecord(row)) : (row["declared_size"]?.integer(as: UInt64.self) ?? 0)
            largest[pack] = max(largest[pack] ?? 0, bytes)
        }
        return try largest.values.reduce(0) { try CheckedInteger.add($0, $1, "the app's quota use", context: app) }
    }

    /// Refuses a version of `size` bytes of `pack` that would bring `app` over its quota. The
    /// app's row is written first, so that checks of one app take turns (two uploads finishing
    /// at once cannot both take the last of the quota).
    /// - Throws: `quotaExceeded`, saying by how much and what to do.
    func requireQuota(
        _ tx: inout any MetadataConnection, app: String, pack: String, size: UInt64, finishing: Bool = false
    ) throws {
        try Apps.takeQuotaTurn(&tx, app)
        let used = try quotaUse(&tx, app: app, replacing: (pack, size))
        guard used > quotaBytes else { return }
        throw BacklotError(
            .quotaExceeded,
            "this version would bring the app to \(used) bytes, \(used - quotaBytes) over its quota of \(quotaBytes)",
            context: "\(app)/\(pack)",
            hint: finishing
                ? "its bytes are kept: delete versions you no longer need (backlot versions delete), then finish the upload (run backlot upload again, or PUT at its last byte with an empty body)"
                : "delete versions you no longer need (backlot versions delete)")
    }

    /// The error for a version declared larger than an app's whole quota, which no deletion can
    /// make room for: names the size and the quota, and that Apple's 200 GB cannot be raised.
    func oversized(_ size: UInt64) -> BacklotError {
        let quota =
            quotaBytes % 1_000_000_000 == 0
            ? "\(quotaBytes / 1_000_000_000) GB (\(quotaBytes) bytes)" : "\(quotaBytes) bytes"
        let limit =
            quotaBytes == Uploads.appleQuotaBytes
            ? "200 GB is Apple's limit for an app's asset packs, and nothing changes it (no setting, no role)"
            : "that is this server's quota per app"
        return BacklotError(
            .invalidInput, "an archive of \(size) bytes is larger than an app's whole quota of \(quota)",
            context: "size",
            hint:
                "\(limit): make the pack smaller (an app's packs together hold at most \(quota), counting each pack's largest version)"
        )
    }

    /// Apple's quota for an app's asset packs: 200 GB (``Repository``'s default).
    static let appleQuotaBytes: UInt64 = 200_000_000_000

    /// ``requireQuota(_:app:pack:size:finishing:)`` for the upload of a version at its declared size;
    /// nothing for a version no longer awaiting its upload.
    func requireQuota(_ tx: inout any MetadataConnection, versionID: Int64) throws {
        guard
            let row = try tx.query(
                "SELECT app, pack, declared_size FROM versions WHERE id = ? AND state = 'AWAITING_UPLOAD'",
                [.integer(versionID)]
            ).first
        else { return }
        try requireQuota(
            &tx, app: row["app"]?.string ?? "", pack: row["pack"]?.string ?? "",
            size: row["declared_size"]?.integer(as: UInt64.self) ?? 0, finishing: true)
    }

    /// Refuses an upload in progress that can no longer fit in its app's quota (another version
    /// took the room meanwhile), so that it stops early rather than at its last byte.
    /// - Throws: `quotaExceeded`; the bytes received stay.
    func requireQuota(forUpload versionID: Int64) throws {
        try db.transaction { tx in try requireQuota(&tx, versionID: versionID) }
    }
}
