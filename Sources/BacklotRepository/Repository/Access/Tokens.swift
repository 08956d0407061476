import BacklotBasics
import BacklotCrypto
import BacklotProtocol
import BacklotStore
import Foundation

/// The tokens (table `tokens`): made, authenticated, listed, revoked and rotated. Only a
/// token's SHA-256 is stored; its text is shown once, when it is made.
///
/// ```swift
/// let uploader = try repository.tokens.issue(role: .uploader, label: "CI", expiresIn: 90 * 86_400)
/// let caller = try repository.tokens.authenticate(uploader.token)
/// try repository.tokens.revoke(id: uploader.id)
/// ```
public final class Tokens: Sendable {
    let db: any MetadataDatabase

    init(db: any MetadataDatabase) {
        self.db = db
    }

    /// The longest lifetime a token may be given: ten years, in seconds.
    public static let longestLifetime = API.Limits.longestTokenLifetime
    /// The shortest: one minute.
    public static let shortestLifetime = API.Limits.shortestTokenLifetime
    /// The longest token label, in characters.
    public static let longestLabel = API.Limits.longestTokenLabel
    /// How often at most a token's last use is recorded (seconds): not a write per request.
    public static let lastUseResolution: Int64 = 60

    static func hash(_ token: String) -> String { SHA256.hash(Array(token.utf8)).hex }

    /// Creates a token; only its SHA-256 is stored. Returns the token text (shown once).
    ///
    /// ```swift
    /// let uploader = try repository.tokens.create(role: .uploader, label: "CI")
    /// ```
    public func create(role: Role, label: String = "") throws -> String {
        try issue(role: role, label: label).token
    }

    /// Creates a token with its id for `person`, optionally expiring.
    /// - Parameters:
    ///   - person: who it belongs to (a person, or a service account such as `ci`): an app's
    ///     four-eyes rule compares people, so that one person's two tokens are one person. nil:
    ///     the token is a person of its own (`token #ID`); the management API always names one.
    ///   - expiresIn: seconds it works for (``shortestLifetime``…``longestLifetime``); nil: until revoked.
    /// - Throws: ``BacklotError/Code/invalidInput`` for a lifetime outside that range, a label or a
    ///   person that is not one line of text, or an empty person.
    public func issue(
        role: Role, person: String? = nil, label: String = "", expiresIn: Int64? = nil
    ) throws
        -> IssuedToken
    {
        if let person { try Self.checkPerson(person) }
        if let expiresIn, !(Self.shortestLifetime...Self.longestLifetime).contains(expiresIn) {
            throw BacklotError(
                .invalidInput,
                "a token lasts \(Self.shortestLifetime)…\(Self.longestLifetime) seconds, not \(expiresIn)",
                context: "expiresInSeconds", hint: "give at least a minute and at most ten years, or no expiry")
        }
        guard label.count <= Self.longestLabel else {
            throw BacklotError(
                .invalidInput,
                "a token's label has at most \(Self.longestLabel) characters (this one has \(label.count))",
                context: "label")
        }
        // Shown in tables, logs and the dashboard: one line of text (DisplayText).
        if let problem = DisplayText.problem(in: label) {
            throw BacklotError(
                .invalidInput, "a token's label \(problem)", context: "label", hint: "give a label of one line of text")
        }
        let token = Self.newText()
        let now = Repository.now()
        let expires = expiresIn.map { now + $0 }
        let id: Int64 = try db.transaction { tx in
            let rows = try tx.query(
                "INSERT INTO tokens(hash, role, label, created, expires, person) VALUES (?, ?, ?, ?, ?, ?) RETURNING id",
                [
                    .text(Self.hash(token)), .text(role.rawValue), .text(label), .integer(now),
                    expires.map { .integer($0) } ?? .null, person.map { .text($0) } ?? .null,
                ])
            guard let id = rows.first?["id"]?.int else {
                throw BacklotError(.io, "the database returned no id for the new token", context: db.displayName)
            }
            try AuditLog.record(
                &tx, .tokenCreate,
                details: [
                    .tokenId: String(id), .tokenLabel: label, .role: role.rawValue,
                    .person: person ?? TokenReference.defaultPerson(ofToken: Int(id)),
                ])
            return id
        }
        let number = try CheckedInteger.convert(id, to: Int.self, "the token id", code: .io)
        return IssuedToken(
            id: number, token: token, role: role, label: label,
            person: person ?? TokenReference.defaultPerson(ofToken: number),
            created: Date(timeIntervalSince1970: Double(now)),
            expires: expires.map { Date(timeIntervalSince1970: Double($0)) })
    }

    /// Whether a usable (unrevoked, unexpired) admin token exists.
    public func hasAdmin() throws -> Bool {
        try db.read { try Self.hasUsableAdmin(&$0) }
    }

    static func hasUsableAdmin(_ tx: inout any MetadataConnection) throws -> Bool {
        try !tx.query(
            "SELECT 1 FROM tokens WHERE role = 'admin' AND revoked IS NULL AND (expires IS NULL OR expires > ?) LIMIT 1",
            [.integer(Repository.now())]
        ).isEmpty
    }

    /// Whether any admin token was ever made (the data folder's first one is made only once).
    func hadAdmin() throws -> Bool {
        try !db.read { try $0.query("SELECT 1 FROM tokens WHERE role = 'admin' LIMIT 1", []) }.isEmpty
    }

    /// Creates the first admin token, for a repository whose database was given (`backlot admin
    /// init`); returns its text, which is shown once (only its SHA-256 is stored).
    /// - Throws: ``BacklotError/Code/conflict`` when a usable admin token exists already (checked and
    ///   created in one transaction, so two callers at once make one token).
    public func createInitialAdmin(
        label: String = "initial admin", person: String = Tokens.initialAdminPerson
    ) throws
        -> String
    {
        try Self.createInitialAdmin(in: db, label: label, person: person)
    }

    /// The person the first admin token belongs to when none is named.
    public static let initialAdminPerson = "admin"

    /// Whether two person names are one person: compared without spaces around them and without
    /// case (`Bob` and `bob ` are one), so that a slip of the admin who names them never makes two.
    public static func samePerson(_ a: String, _ b: String) -> Bool {
        a.trimmingCharacters(in: .whitespaces).lowercased() == b.trimmingCharacters(in: .whitespaces).lowercased()
    }

    /// - Throws: ``BacklotError/Code/invalidInput`` for an empty person, a longer one than a label
    ///   may be, or one that is not one line of text.
    static func checkPerson(_ person: String) throws {
        guard !person.isEmpty else {
            throw BacklotError(
                .invalidInput, "a token belongs to a person (or a service account): the name is empty",
                context: "person", hint: "name who will use it, such as alice or ci")
        }
        guard person.unicodeScalars.count <= Self.longestLabel else {
            throw BacklotError(
                .invalidInput,
                "a person's name has at most \(Self.longestLabel) characters (this one has \(person.unicodeScalars.count))",
                context: "person")
        }
        if let problem = DisplayText.problem(in: person) {
            throw BacklotError(.invalidInput, "a person's name \(problem)", context: "person")
        }
    }

    /// The same on a database alone (no data folder): migrates its schema first. When every admin
    /// token expired or was revoked, this makes a new one (the way back in).
    ///
    /// ```swift
    /// let token = try Tokens.createInitialAdmin(in: PostgresDatabase(url: url))
    /// ```
    /// - Throws: ``BacklotError/Code/conflict`` when a usable admin token exists; what migrating throws.
    public static func createInitialAdmin(
        in db: any MetadataDatabase, label: String = "initial admin", person: String = Tokens.initialAdminPerson
    ) throws -> String {
        try checkPerson(person)
        try SchemaMigration.apply(Repository.schemaSteps, to: db)
        let token = newText()
        try db.transaction { tx in
            // One writer at a time decides whether the first admin token exists.
            try tx.lockUntilCommit("backlot initial admin token")
            guard try !hasUsableAdmin(&tx) else {
                throw BacklotError(
                    .conflict, "an admin token exists already", context: db.displayName,
                    hint: "use it to make more tokens (backlot tokens create); admin init only makes the first")
            }
            try tx.run(
                "INSERT INTO tokens(hash, role, label, created, person) VALUES (?, ?, ?, ?, ?)",
                [
                    .text(hash(token)), .text(Role.admin.rawValue), .text(label), .integer(Repository.now()),
                    .text(person),
                ])
            try AuditLog.record(
                &tx, .tokenCreate, details: [.tokenLabel: label, .role: Role.admin.rawValue, .person: person])
        }
        return token
    }

    /// A new token's text: `blt_` and 64 hex digits of 32 random bytes.
    static func newText() -> String {
        var random = [UInt8](repeating: 0, count: 32)
        var generator = SystemRandomNumberGenerator()
        for i in random.indices { random[i] = UInt8.random(in: 0...255, using: &generator) }
        return "blt_" + random.map { String(format: "%02x", $0) }.joined()
    }

    /// The role of a usable token, or nil when it is unknown, expired or revoked.
    public func role(ofToken token: String) throws -> Role? {
        do { return try authenticate(token).role } catch let e as BacklotError where e.code == .unauthorized {
            return nil
        }
    }

    /// Who a bearer token is. Reads the database every time, so a revocation or an expiry takes
    /// effect at once on every server; records the last use at most once a minute.
    /// - Throws: ``BacklotError/Code/unauthorized`` for an unknown token, an expired one (saying
    ///   when it expired) and a revoked one; ``BacklotError/Code/unavailable`` without a database.
    public func authenticate(_ token: String) throws -> Caller {
        let hash = Self.hash(token)
        let rows = try db.read { try $0.query("SELECT * FROM tokens WHERE hash = ?", [.text(hash)]) }
        guard let row = rows.first, let info = Self.info(row) else {
            throw BacklotError(
                .unauthorized, "the token is not valid", hint: "ask an admin for a token (backlot tokens create)")
        }
        let now = Repository.now()
        if let revoked = info.revoked {
            throw BacklotError(
                .unauthorized, "the token was revoked at \(RFC3339.string(revoked))", context: "token \(info.id)",
                hint: "ask an admin for a new token")
        }
        if let expires = info.expires, expires <= Date(timeIntervalSince1970: Double(now)) {
            throw BacklotError(
                .unauthorized, "the token expired at \(RFC3339.string(expires))", context: "token \(info.id)",
                hint: "ask an admin to rotate it (backlot tokens rotate) or for a new one")
        }
        let last = row["last_used"]?.int
        if last.map({ now - $0 >= Self.lastUseResolution }) ?? true {
            _ = try db.runAlone(
                "UPDATE tokens SET last_used = ? WHERE id = ? AND (last_used IS NULL OR last_used <= ?)",
                [.integer(now), .integer(Int64(info.id)), .integer(now - Self.lastUseResolution)])
        }
        return Caller(id: info.id, label: info.label, role: info.role, person: info.person)
    }

    /// Every token, oldest first: never a secret nor a hash.
    public func list() throws -> [TokenInfo] {
        try db.read { try $0.query("SELECT * FROM tokens ORDER BY id", []) }.compactMap(Self.info)
    }

    /// One token. - Throws: `notFound`.
    public func token(id: Int) throws -> TokenInfo {
        guard let row = try db.read({ try $0.query("SELECT * FROM tokens WHERE id = ?", [.integer(Int64(id))]) }).first,
            let info = Self.info(row)
        else {
            throw BacklotError(
                .notFound, "no such token", context: "token \(id)", hint: "list them: backlot tokens list")
        }
        return info
    }

    /// Revokes a token: every server refuses it from the next request on. Revoking a revoked token changes nothing.
    /// - Throws: `notFound`; `conflict` when it is the last usable admin token.
    @discardableResult
    public func revoke(id: Int) throws -> TokenInfo {
        try db.transaction { tx in
            try tx.lockUntilCommit("backlot initial admin token")
            guard let row = try tx.query("SELECT * FROM tokens WHERE id = ?", [.integer(Int64(id))]).first,
                let info = Self.info(row)
            else {
                throw BacklotError(
                    .notFound, "no such token", context: "token \(id)", hint: "list them: backlot tokens list")
            }
            guard info.revoked == nil else { return }
            if info.role == .admin, info.isUsable(at: Date(timeIntervalSince1970: Double(Repository.now()))) {
                let others =
                    try tx.query(
                        """
                        SELECT COUNT(*) AS n FROM tokens WHERE role = 'admin' AND id != ? AND revoked IS NULL AND (expires IS NULL OR expires > ?)
                        """, [.integer(Int64(id)), .integer(Repository.now())]
                    ).first?["n"]?.int ?? 0
                guard others > 0 else {
                    throw BacklotError(
                        .conflict, "this is the last admin token that works: revoking it would lock every admin out",
                        context: "token \(id)",
                        hint: "create another admin token first (backlot tokens create --role admin)")
                }
            }
            try tx.run("UPDATE tokens SET revoked = ? WHERE id = ?", [.integer(Repository.now()), .integer(Int64(id))])
            try AuditLog.record(
                &tx, .tokenRevoke,
                details: [.tokenId: String(id), .tokenLabel: info.label, .role: info.role.rawValue])
        }
        return try token(id: id)
    }

    /// Gives a token a new secret (same id, role and label; a lifetime it had starts again): the old secret stops working at once.
    /// - Throws: `notFound`; `conflict` for a revoked token.
    public func rotate(id: Int) throws -> IssuedToken {
        let secret = Self.newText()
        let now = Repository.now()
        let info: TokenInfo = try db.transaction { tx in
            guard let row = try tx.query("SELECT * FROM tokens WHERE id = ?", [.integer(Int64(id))]).first,
                let info = Self.info(row)
            else {
                throw BacklotError(
                    .notFound, "no such token", context: "token \(id)", hint: "list them: backlot tokens list")
            }
            guard info.revoked == nil else {
                throw BacklotError(
                    .conflict, "a revoked token cannot be rotated", context: "token \(id)",
                    hint: "create a new token instead")
            }
            let lifetime = info.expires.map { Int64($0.timeIntervalSince1970 - info.created.timeIntervalSince1970) }
            try tx.run(
                "UPDATE tokens SET hash = ?, created = ?, expires = ?, last_used = NULL WHERE id = ?",
                [
                    .text(Self.hash(secret)), .integer(now), lifetime.map { .integer(now + $0) } ?? .null,
                    .integer(Int64(id)),
                ])
            try AuditLog.record(
                &tx, .tokenRotate,
                details: [.tokenId: String(id), .tokenLabel: info.label, .role: info.role.rawValue])
            return info
        }
        let fresh = try token(id: id)
        return IssuedToken(
            id: info.id, token: secret, role: info.role, label: info.label, person: info.person, created: fresh.created,
            expires: fresh.expires)
    }

    static func info(_ row: Database.Row) -> TokenInfo? {
        guard let id = row["id"]?.integer(as: Int.self), let role = row["role"]?.string.flatMap(Role.init(rawValue:))
        else { return nil }
        func date(_ column: String) -> Date? { row[column]?.int.map { Date(timeIntervalSince1970: Double($0)) } }
        return TokenInfo(
            id: id, label: row["label"]?.string ?? "", role: role,
            person: row["person"]?.string ?? TokenReference.defaultPerson(ofToken: id),
            created: date("created") ?? Date(timeIntervalSince1970: 0),
            lastUsed: date("last_used"), expires: date("expires"), revoked: date("revoked"))
    }
}

extension BacklotError.Code {
    /// The caller gave no token, or one that is unknown, expired or revoked (HTTP 401).
    public static let unauthorized = BacklotError.Code("unauthorized", isInvalidInput: true)
    /// An app's four-eyes rule: a release request cannot be approved by the person who made it,
    /// with any of their tokens (HTTP 403).
    public static let fourEyes = BacklotError.Code("fourEyes", isInvalidInput: true)
}
