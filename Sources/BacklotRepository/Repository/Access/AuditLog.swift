import BacklotBasics
import BacklotJSON
import BacklotProtocol
import BacklotStore
import Foundation

/// The audit trail (table `audit`): who changed what, written inside each change's own
/// transaction by the service that makes the change (``record(_:_:app:pack:version:details:by:system:)``),
/// and read a page at a time (``entries(app:action:limit:before:)``).
///
/// ```swift
/// let page = try repository.audit.entries(app: "com.example.game", limit: 50)
/// for entry in page.entries { print(entry.action, entry.actorLabel) }
/// ```
public final class AuditLog: Sendable {
    let db: any MetadataDatabase

    init(db: any MetadataDatabase) {
        self.db = db
    }

    /// Every action the audit trail records (docs/protocol.md, "The audit trail").
    public static let actions = API.auditActions

    /// The most entries one page of ``entries(app:action:limit:before:)`` holds.
    public static let pageLimit = API.Limits.auditPageLimit

    /// Records a change in the audit trail, inside the change's own transaction (so that a
    /// change rolled back leaves no entry). The actor is `caller`, else ``Caller/current``; with
    /// `system` (the server's own work: processing, re-signing, removals) or no caller, no token
    /// (`server`, or `local` for a command run on the data folder). Needs no open repository
    /// (`admin init` records the first admin token with it).
    static func record(
        _ tx: inout any MetadataConnection, _ action: API.AuditAction, app: String? = nil, pack: String? = nil,
        version: Int? = nil, details: [API.AuditDetail: String] = [:], by caller: Caller? = nil, system: Bool = false
    ) throws {
        let actor = system ? nil : (caller ?? Caller.current)
        let detailText = JSONNode(
            .object(
                details.map { (key: $0.key.rawValue, value: $0.value) }.sorted { $0.key < $1.key }.map {
                    JSONMember(key: $0.key, value: .string($0.value))
                })
        ).serialized()
        try tx.run(
            """
            INSERT INTO audit(time, token_id, actor_label, actor_role, app, pack, version, action, details, actor_person)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """,
            [
                .integer(Repository.now()), actor.map { .integer(Int64($0.id)) } ?? .null,
                .text(actor?.label ?? (system ? "server" : "local")), .text(actor?.role.rawValue ?? "system"),
                app.map { .text($0) } ?? .null, pack.map { .text($0) } ?? .null,
                version.map { .integer(Int64($0)) } ?? .null, .text(action.rawValue), .text(detailText),
                actor.map { .text($0.person) } ?? .null,
            ])
    }

    /// The person who last did `action` on a pack on `channel` (nil when nobody did, or the server
    /// or a local command did): what a rule about two people compares with.
    static func lastPerson(
        _ tx: inout any MetadataConnection, of action: API.AuditAction, app: String, pack: String, channel: String
    ) throws -> String? {
        // The details are the JSON `record` writes: its members sorted, the channel one of them.
        guard
            let row = try tx.query(
                """
                SELECT token_id, actor_person FROM audit WHERE action = ? AND app = ? AND pack = ? AND details LIKE ?
                ORDER BY id DESC LIMIT 1
                """,
                [.text(action.rawValue), .text(app), .text(pack), .text("%\"channel\":\"\(channel)\"%")]
            ).first,
            let token = row["token_id"]?.integer(as: Int.self)
        else { return nil }
        return row["actor_person"]?.string ?? TokenReference.defaultPerson(ofToken: token)
    }

    /// Records a change that has no transaction of its own (a key rotation writes files), in one of its own.
    func recordAlone(_ action: API.AuditAction, details: [API.AuditDetail: String] = [:], system: Bool = false) throws {
        try db.transaction { tx in try Self.record(&tx, action, details: details, system: system) }
    }

    /// One page of the audit trail, newest first.
    ///
    /// ```swift
    /// var page = try repository.audit.entries(limit: 100)
    /// while let next = page.next { page = try repository.audit.entries(limit: 100, before: next) }
    /// ```
    /// - Parameters:
    ///   - app: only this app's entries; `action`: only this action (one of ``actions``).
    ///   - limit: 1…``pageLimit`` entries.
    ///   - before: only entries older than this id (the `next` of the page before).
    /// - Returns: the entries and the `before` of the next page (nil when there is none).
    /// - Throws: ``BacklotError/Code/invalidInput`` for a limit out of range or an unknown action.
    public func entries(
        app: String? = nil, action: String? = nil, limit: Int = 100, before: Int? = nil
    ) throws
        -> (entries: [AuditEntry], next: Int?)
    {
        guard (1...Self.pageLimit).contains(limit) else {
            throw BacklotError(
                .invalidInput, "a page of the audit trail has 1…\(Self.pageLimit) entries, not \(limit)",
                context: "limit")
        }
        if let action, !Self.actions.contains(action) {
            throw BacklotError(
                .invalidInput, "no such action: \(action)", context: "action",
                hint: "one of \(Self.actions.joined(separator: ", "))")
        }
        var conditions: [String] = []
        var bindings: [Database.Value] = []
        if let app {
            conditions.append("app = ?")
            bindings.append(.text(app))
        }
        if let action {
            conditions.append("action = ?")
            bindings.append(.text(action))
        }
        if let before {
            conditions.append("id < ?")
            bindings.append(.integer(Int64(before)))
        }
        bindings.append(.integer(Int64(limit + 1)))
        let sql =
            "SELECT * FROM audit\(conditions.isEmpty ? "" : " WHERE " + conditions.joined(separator: " AND ")) ORDER BY id DESC LIMIT ?"
        let rows = try db.read { try $0.query(sql, bindings) }
        let entries = rows.prefix(limit).compactMap(Self.entry)
        return (entries, rows.count > limit ? entries.last?.id : nil)
    }

    /// When the server last re-signed a catalog because it was about to expire (``Publication/resign(margin:now:)``), or nil.
    public func lastResign() throws -> Date? {
        try db.read {
            try $0.query(
                "SELECT MAX(time) AS t FROM audit WHERE action = ?", [.text(API.AuditAction.catalogResign.rawValue)]
            ).first?["t"]?.int
        }.map { Date(timeIntervalSince1970: Double($0)) }
    }

    static func entry(_ row: Database.Row) -> AuditEntry? {
        guard let id = row["id"]?.integer(as: Int.self), let action = row["action"]?.string else { return nil }
        var details: [String: String] = [:]
        if let text = row["details"]?.string,
            let members = try? JSONReader(source: "audit").read(text).root.objectMembers
        {
            for member in members { details[member.key] = member.value.stringValue ?? "" }
        }
        return AuditEntry(
            id: id, time: Date(timeIntervalSince1970: Double(row["time"]?.int ?? 0)),
            tokenID: row["token_id"]?.integer(as: Int.self), actorLabel: row["actor_label"]?.string ?? "",
            actorRole: row["actor_role"]?.string ?? "system", actorPerson: row["actor_person"]?.string,
            app: row["app"]?.string, pack: row["pack"]?.string,
            version: row["version"]?.integer(as: Int.self), action: action, details: details)
    }
}
