import BacklotBasics
import BacklotCrypto
import BacklotFormat
import BacklotJSON
import BacklotStore
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A request to release a version on the external or production channel, awaiting a reviewer.
public struct ReleaseRequest: Sendable, Hashable {
    public let id: Int
    public let app: String
    public let channel: Channel
    public let pack: String
    public let version: Int
    public let rolloutPercent: Double?
    /// `pending`, `approved`, `rejected` or `superseded`.
    public let status: String

    public var json: JSONNode {
        .object(["id": .number(id), "app": .string(app), "channel": .string(channel.rawValue), "pack": .string(pack), "version": .number(version),
                 "rolloutPercent": rolloutPercent.map { JSONNode.number($0) } ?? .null, "status": .string(status)])
    }
}

extension Repository {
    /// Releases a COMPLETE version: at once on `internal`; as a request awaiting approval on
    /// `external` and `production` (a newer request supersedes a pending one).
    /// - Parameter rolloutPercent: production only: the share of devices that take it, if a version is already live.
    /// - Returns: the pending request, or nil when it was released at once.
    @discardableResult
    public func release(app: String, pack: String, version: Int, channel: Channel, rolloutPercent: Double? = nil) throws -> ReleaseRequest? {
        if let p = rolloutPercent {
            guard channel == .production else {
                throw BacklotError(.invalidInput, "staged rollouts are for the production channel only", context: "rollout")
            }
            guard p > 0, p <= 100 else { throw BacklotError(.invalidInput, "the rollout percentage must be above 0 and at most 100", context: "rollout") }
        }
        let bp = rolloutPercent.map { Int(($0 * 100).rounded()) }
        let requestID: Int64? = try db.transaction { tx in
            try requirePack(&tx, app, pack)
            try requireComplete(&tx, app, pack, version)
            guard channel != .internal else {
                try apply(&tx, app: app, channel: channel, pack: pack, version: version, basisPoints: nil)
                return nil
            }
            try tx.run("UPDATE release_requests SET status = 'superseded', decided = ? WHERE app = ? AND channel = ? AND pack = ? AND status = 'pending'",
                       [.integer(Self.now()), .text(app), .text(channel.rawValue), .text(pack)])
            let inserted = try tx.query("""
                INSERT INTO release_requests(app, channel, pack, version, rollout_bp, status, requested) VALUES (?, ?, ?, ?, ?, 'pending', ?)
                RETURNING id
                """, [.text(app), .text(channel.rawValue), .text(pack), .integer(Int64(version)), bp.map { .integer(Int64($0)) } ?? .null,
                      .integer(Self.now())])
            guard let id = inserted.first?["id"]?.int else {
                throw BacklotError(.io, "the database returned no id for the new release request", context: db.displayName)
            }
            return id
        }
        guard let requestID else {
            TestStopPoint.reach("release.committed")
            try publish(app: app, channel: channel)
            return nil
        }
        return try releaseRequest(try CheckedInteger.convert(requestID, to: Int.self, "the new release request id", code: .io))
    }

    func requireComplete(_ tx: inout any MetadataConnection, _ app: String, _ pack: String, _ version: Int) throws {
        let rows = try tx.query("SELECT state FROM versions WHERE app = ? AND pack = ? AND number = ? AND deleted = 0",
                                [.text(app), .text(pack), .integer(Int64(version))])
        guard let state = rows.first?["state"]?.string else {
            throw BacklotError(.notFound, "no version \(version) of \(app)/\(pack)", context: "\(app)/\(pack)/\(version)")
        }
        guard state == VersionState.complete.rawValue else {
            throw BacklotError(.conflict, "version \(version) of \(app)/\(pack) is \(state), not COMPLETE", context: "\(app)/\(pack)/\(version)",
                               hint: "only processed versions can be released")
        }
    }

    func apply(_ tx: inout any MetadataConnection, app: String, channel: Channel, pack: String, version: Int, basisPoints: Int?) throws {
        let current = try tx.query("SELECT live FROM channel_packs WHERE app = ? AND channel = ? AND pack = ?", [.text(app), .text(channel.rawValue), .text(pack)])
        let live = current.first?["live"]?.int
        if let bp = basisPoints, bp < 10_000, let live, live != Int64(version) {
            try tx.run("UPDATE channel_packs SET candidate = ?, rollout_bp = ? WHERE app = ? AND channel = ? AND pack = ?",
                       [.integer(Int64(version)), .integer(Int64(bp)), .text(app), .text(channel.rawValue), .text(pack)])
        } else {
            try tx.run("""
                INSERT INTO channel_packs(app, channel, pack, live, candidate, rollout_bp) VALUES (?, ?, ?, ?, NULL, 0)
                ON CONFLICT(app, channel, pack) DO UPDATE SET live = excluded.live, candidate = NULL, rollout_bp = 0
                """, [.text(app), .text(channel.rawValue), .text(pack), .integer(Int64(version))])
        }
    }

    /// One release request.
    /// - Parameter app: when given, the request must belong to this app (a request of another app is not found).
    /// - Throws: `notFound`.
    public func releaseRequest(_ id: Int, app: String? = nil) throws -> ReleaseRequest {
        let rows = try db.read { try $0.query("SELECT * FROM release_requests WHERE id = ?", [.integer(Int64(id))]) }
        guard let r = rows.first, app == nil || r["app"]?.string == app else {
            throw BacklotError(.notFound, "no release request \(id)\(app.map { " in \($0)" } ?? "")", context: "request \(id)")
        }
        return ReleaseRequest(id: r["id"]?.integer(as: Int.self) ?? 0, app: r["app"]?.string ?? "",
                              channel: Channel(rawValue: r["channel"]?.string ?? "") ?? .production,
                              pack: r["pack"]?.string ?? "", version: r["version"]?.integer(as: Int.self) ?? 0,
                              rolloutPercent: r["rollout_bp"]?.int.map { Double($0) / 100 }, status: r["status"]?.string ?? "")
    }

    /// The release requests of an app, oldest first. - Throws: `notFound` for an unknown app.
    public func releaseRequests(app: String) throws -> [ReleaseRequest] {
        try db.transaction { tx in
            try requireApp(&tx, app)
            return try tx.query("SELECT id FROM release_requests WHERE app = ? ORDER BY id", [.text(app)])
        }.compactMap { $0["id"]?.integer(as: Int.self) }.map { try releaseRequest($0) }
    }

    /// Approves a pending request: the version goes live (or becomes the rollout candidate).
    /// - Parameter app: when given, the request must belong to this app (else `notFound`).
    public func approve(requestID: Int, app: String? = nil) throws {
        let request = try releaseRequest(requestID, app: app)
        try db.transaction { tx in
            guard try tx.run("UPDATE release_requests SET status = 'approved', decided = ? WHERE id = ? AND status = 'pending'",
                             [.integer(Self.now()), .integer(Int64(requestID))]) == 1 else {
                throw BacklotError(.conflict, "release request \(requestID) is \(request.status), not pending", context: "request \(requestID)")
            }
            try requireComplete(&tx, request.app, request.pack, request.version)
            try apply(&tx, app: request.app, channel: request.channel, pack: request.pack, version: request.version,
                      basisPoints: request.rolloutPercent.map { Int(($0 * 100).rounded()) })
        }
        TestStopPoint.reach("release.committed")
        try publish(app: request.app, channel: request.channel)
    }

    /// Rejects a pending request.
    /// - Parameter app: when given, the request must belong to this app (else `notFound`).
    public func reject(requestID: Int, app: String? = nil, reason: String) throws {
        _ = try releaseRequest(requestID, app: app)
        try db.transaction { tx in
            guard try tx.run("UPDATE release_requests SET status = 'rejected', decided = ?, reason = ? WHERE id = ? AND status = 'pending'",
                             [.integer(Self.now()), .text(reason), .integer(Int64(requestID))]) == 1 else {
                throw BacklotError(.conflict, "release request \(requestID) is not pending", context: "request \(requestID)")
            }
        }
    }

    /// Puts an earlier COMPLETE version live again (its pack version goes down; the catalog version still grows).
    public func rollback(app: String, pack: String, channel: Channel, to version: Int) throws {
        try db.transaction { tx in
            try requireComplete(&tx, app, pack, version)
            try apply(&tx, app: app, channel: channel, pack: pack, version: version, basisPoints: nil)
        }
        try publish(app: app, channel: channel)
    }

    /// Changes a candidate's rollout share; 100 makes it the live version.
    public func setRollout(app: String, pack: String, percent: Double) throws {
        guard percent > 0, percent <= 100 else { throw BacklotError(.invalidInput, "the rollout percentage must be above 0 and at most 100") }
        try db.transaction { tx in
            let rows = try tx.query("SELECT candidate FROM channel_packs WHERE app = ? AND channel = 'production' AND pack = ?", [.text(app), .text(pack)])
            guard let candidate = rows.first?["candidate"]?.integer(as: Int.self) else {
                throw BacklotError(.conflict, "\(app)/\(pack) has no staged rollout on production", context: "\(app)/\(pack)")
            }
            try apply(&tx, app: app, channel: .production, pack: pack, version: candidate, basisPoints: Int((percent * 100).rounded()))
        }
        try publish(app: app, channel: .production)
    }

    /// Removes a pack from a channel: clients then report it as obsolete.
    public func withdraw(app: String, pack: String, channel: Channel) throws {
        try db.transaction { tx in
            guard try tx.run("DELETE FROM channel_packs WHERE app = ? AND channel = ? AND pack = ?", [.text(app), .text(channel.rawValue), .text(pack)]) == 1 else {
                throw BacklotError(.notFound, "\(app)/\(pack) is not on \(channel.rawValue)", context: "\(app)/\(pack)")
            }
        }
        try publish(app: app, channel: channel)
    }
}
