import BacklotBasics
import BacklotPostgres
import BacklotStore
import BacklotTestSupport
import Foundation
import Synchronization
import Testing

@testable import BacklotRepository

/// The two metadata backends behave alike: constraints as conflicts, schema migrations, 64-bit
/// numbers; and PostgreSQL's own faults: a restart under a running repository, a wrong password,
/// an unreachable server, concurrent writers. Real PostgreSQL 15 in a throwaway cluster.
@Suite(.serialized) struct MetadataBackendTests {
    /// Today's schema before `schema_version` existed (the first releases wrote exactly this).
    static let schemaWithoutVersions = """
        CREATE TABLE IF NOT EXISTS tokens (hash TEXT PRIMARY KEY, role TEXT NOT NULL, label TEXT NOT NULL, created INTEGER NOT NULL);
        CREATE TABLE IF NOT EXISTS apps (id TEXT PRIMARY KEY, created INTEGER NOT NULL);
        CREATE TABLE IF NOT EXISTS packs (app TEXT NOT NULL REFERENCES apps(id), id TEXT NOT NULL, created INTEGER NOT NULL, PRIMARY KEY (app, id));
        CREATE TABLE IF NOT EXISTS versions (
            id INTEGER PRIMARY KEY AUTOINCREMENT, app TEXT NOT NULL, pack TEXT NOT NULL, number INTEGER NOT NULL,
            state TEXT NOT NULL, reason TEXT, declared_size INTEGER NOT NULL, archive_sha256 TEXT, index_offset INTEGER,
            index_length INTEGER, index_sha256 TEXT, install_size INTEGER, metadata TEXT, created INTEGER NOT NULL, deleted INTEGER NOT NULL DEFAULT 0,
            format TEXT NOT NULL DEFAULT 'pack', manifest TEXT,
            UNIQUE (app, pack, number), FOREIGN KEY (app, pack) REFERENCES packs(app, id));
        CREATE TABLE IF NOT EXISTS channel_packs (
            app TEXT NOT NULL, channel TEXT NOT NULL, pack TEXT NOT NULL, live INTEGER, candidate INTEGER, rollout_bp INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (app, channel, pack));
        CREATE TABLE IF NOT EXISTS release_requests (
            id INTEGER PRIMARY KEY AUTOINCREMENT, app TEXT NOT NULL, channel TEXT NOT NULL, pack TEXT NOT NULL, version INTEGER NOT NULL,
            rollout_bp INTEGER, status TEXT NOT NULL, requested INTEGER NOT NULL, decided INTEGER, reason TEXT);
        CREATE TABLE IF NOT EXISTS catalogs (app TEXT NOT NULL, channel TEXT NOT NULL, version INTEGER NOT NULL, expires INTEGER NOT NULL, PRIMARY KEY (app, channel));
        """

    /// A bare database of `backend` (SQLite in `dir`), for tests below the repository.
    func bare(_ backend: Backend, in dir: TemporaryDirectory, _ label: String) throws -> any MetadataDatabase {
        switch backend {
        case .sqlite: try SQLiteMetadataDatabase(path: dir.at("\(label).sqlite"))
        case .postgresql, .bucket: try PostgresDatabase(url: PostgresCluster.shared().createDatabase(label))
        }
    }

    @Test(arguments: Backend.databases) func uniqueAndForeignKeyViolationsAreConflicts(_ backend: Backend) throws {
        let dir = try TemporaryDirectory("conflict")
        defer { dir.remove() }
        let repo = try backend.repository(at: dir.at("data"), label: "conflict")
        try repo.apps.create("com.example.game")
        #expect { try repo.apps.create("com.example.game") } throws: {
            let e = $0 as? BacklotError
            return e?.code == .conflict && e?.message.contains("exists already") == true
        }
        try repo.apps.createPack(app: "com.example.game", id: "Levels")
        #expect { try repo.apps.createPack(app: "com.example.game", id: "Levels") } throws: {
            ($0 as? BacklotError)?.code == .conflict
        }
        // Straight at the database: a duplicate key, and a pack of an app that does not exist.
        let db = repo.db
        #expect {
            try db.transaction {
                try $0.run("INSERT INTO apps(id, created) VALUES (?, ?)", [.text("com.example.game"), .integer(1)])
            }
        } throws: {
            ($0 as? BacklotError)?.code == .conflict
        }
        #expect {
            try db.transaction {
                try $0.run(
                    "INSERT INTO packs(app, id, created) VALUES (?, ?, ?)", [.text("nope"), .text("P"), .integer(1)])
            }
        } throws: {
            ($0 as? BacklotError)?.code == .conflict
        }
        // The failed transactions left nothing behind, and the database takes the next change.
        #expect(try repo.apps.ids() == ["com.example.game"])
        try repo.apps.create("com.example.other")
        #expect(try repo.apps.ids() == ["com.example.game", "com.example.other"])
    }

    @Test(arguments: Backend.databases) func numbersTextAndBytesRoundTripWithoutLoss(_ backend: Backend) throws {
        let dir = try TemporaryDirectory("values")
        defer { dir.remove() }
        let db = try bare(backend, in: dir, "values")
        let blobType = backend == .sqlite ? "BLOB" : "BYTEA"
        let realType = backend == .sqlite ? "REAL" : "DOUBLE PRECISION"
        try db.transaction { try $0.execute("CREATE TABLE t (i BIGINT, r \(realType), s TEXT, b \(blobType))") }
        let bytes: [UInt8] = [0, 1, 0x7F, 0x80, 0xFF, 0x5C, 0x78]
        let text = "it's a \"quoted\" ? — ünïcode"
        for value in [Int64.max, Int64.min, 0, -1] {
            try db.transaction { tx in
                try tx.run(
                    "INSERT INTO t(i, r, s, b) VALUES (?, ?, ?, ?)",
                    [.integer(value), .real(0.1), .text(text), .blob(bytes)])
            }
        }
        let rows = try db.read { try $0.query("SELECT i, r, s, b FROM t WHERE s = ? ORDER BY i", [.text(text)]) }
        #expect(rows.map { $0["i"] } == [.integer(Int64.min), .integer(-1), .integer(0), .integer(Int64.max)])
        #expect(rows.allSatisfy { $0["r"] == .real(0.1) && $0["s"] == .text(text) && $0["b"] == .blob(bytes) })
        // A '?' inside quoted text is text, not a placeholder.
        let quoted = try db.read { try $0.query("SELECT '?' AS q, i FROM t WHERE i = ?", [.integer(Int64.max)]) }
        #expect(quoted.first?["q"] == .text("?") && quoted.first?["i"] == .integer(Int64.max))
        let inserted = try db.transaction { try $0.query("INSERT INTO t(i) VALUES (?) RETURNING i", [.integer(42)]) }
        #expect(inserted.first?["i"] == .integer(42))
    }

    @Test func placeholdersAreNumberedOutsideQuotesAndComments() throws {
        #expect(
            try PostgresPlaceholders.numbered(
                "SELECT '?', \"a?\" FROM t WHERE a = ? AND b = ? -- ?\n AND c = ? /* ? */", expecting: 3)
                == "SELECT '?', \"a?\" FROM t WHERE a = $1 AND b = $2 -- ?\n AND c = $3 /* ? */")
        #expect(
            try PostgresPlaceholders.numbered("SELECT 'it''s ?' WHERE x = ?", expecting: 1)
                == "SELECT 'it''s ?' WHERE x = $1")
        #expect { try PostgresPlaceholders.numbered("SELECT ?", expecting: 2) } throws: {
            ($0 as? BacklotError)?.code == .invalidInput
        }
    }

    @Test func anOldSQLiteDatabaseWithoutSchemaVersionsUpgradesOnOpen() throws {
        let dir = try TemporaryDirectory("old-schema")
        defer { dir.remove() }
        try FileSystem.makeDirectory(dir.at("data"), mode: 0o700)
        do {
            let old = try Database(path: dir.at("data/meta.sqlite"))
            try old.transaction { tx in
                try tx.execute(Self.schemaWithoutVersions)
                try tx.run("INSERT INTO apps(id, created) VALUES (?, ?)", [.text("com.example.old"), .integer(1)])
                try tx.run("INSERT INTO tokens(hash, role, label, created) VALUES ('h', 'admin', 'old admin', 1)")
                try tx.run(
                    "INSERT INTO tokens(hash, role, label, created) VALUES ('h2', 'reviewer', 'old reviewer', 2)")
                try tx.run(
                    "INSERT INTO release_requests(app, channel, pack, version, status, requested) VALUES ('com.example.old', 'production', 'Levels', 1, 'pending', 3)"
                )
            }
        }
        let repo = try Repository(directory: RepositoryDirectory(path: dir.at("data")))
        #expect(try repo.apps.ids() == ["com.example.old"])
        // Step 4: the old tokens got ids in the order they were made, no expiry, no revocation; apps no four-eyes rule.
        let tokens = try repo.tokens.list()
        #expect(tokens.map(\.id) == [1, 2] && tokens.map(\.label) == ["old admin", "old reviewer"])
        #expect(tokens.allSatisfy { $0.expires == nil && $0.revoked == nil && $0.lastUsed == nil })
        #expect(try repo.apps.list().map(\.fourEyes) == [false])
        let request = try repo.releases.request(1)
        #expect(request.status == "pending" && request.requestedBy == nil && request.decidedBy == nil)
        #expect(try repo.db.read { try $0.query("SELECT COUNT(*) AS n FROM live_history", []) }.first?["n"]?.int == 0)
        let columns = try repo.db.read { try $0.query("SELECT name FROM pragma_table_info('versions')", []) }.compactMap
        { $0["name"]?.string }
        #expect(columns.contains("declared_sha256") && columns.contains("upload_activity"))
        let versions = try repo.db.read { try $0.query("SELECT version FROM schema_version ORDER BY version", []) }
            .compactMap { $0["version"]?.int }
        #expect(versions == Array(1...Repository.schemaVersion))
        let indexes = try repo.db.read {
            try $0.query("SELECT name FROM sqlite_master WHERE type = 'index' AND name = 'versions_by_state'", [])
        }
        #expect(indexes.count == 1)
        // The old admin token counts: no second one is made.
        #expect(!FileSystem.exists(repo.adminTokenPath))
        // Opening again applies nothing twice.
        _ = try Repository(directory: RepositoryDirectory(path: dir.at("data")))
        #expect(
            try repo.db.read { try $0.query("SELECT COUNT(*) AS n FROM schema_version", []) }.first?["n"]?.int
                == Repository.schemaVersion)
    }

    @Test(arguments: Backend.databases) func aDatabaseNewerThanThisBuildIsRefusedNamingBothVersions(
        _ backend: Backend
    ) throws {
        let dir = try TemporaryDirectory("newer")
        defer { dir.remove() }
        let database = try backend.database("newer")
        let repo = try Repository(directory: RepositoryDirectory(path: dir.at("data")), database: database)
        try repo.db.transaction {
            try $0.run("INSERT INTO schema_version(version, summary, applied) VALUES (999, 'from the future', 0)")
        }
        #expect {
            _ = try Repository(directory: RepositoryDirectory(path: dir.at("data")), database: database)
        } throws: {
            let e = $0 as? BacklotError
            return e?.code == .invalidInput && e?.message.contains("version 999") == true
                && e?.message.contains("version \(Repository.schemaVersion)") == true
        }
    }

    @Test(arguments: Backend.databases) func openersStartingAtOnceOnANewDatabaseMigrateItOnce(_ backend: Backend) throws
    {
        let dir = try TemporaryDirectory("openers")
        defer { dir.remove() }
        let url = backend == .postgresql ? try PostgresCluster.shared().createDatabase("openers") : nil
        let openers = 4
        // Copies of one folder (one storage ID): a database belongs to one storage (StorageRecordTests).
        let folder = try RepositoryDirectory(path: dir.at("data"))
        _ = try folder.storageID()
        for i in 0..<openers { try FileManager.default.copyItem(atPath: folder.path, toPath: dir.at("data\(i)")) }
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: openers) { i in
            do {
                // Each opener has its own connection, as separate processes would.
                let db: any MetadataDatabase =
                    try url.map { try PostgresDatabase(url: $0) }
                    ?? SQLiteMetadataDatabase(path: dir.at("shared.sqlite"))
                _ = try Repository(directory: RepositoryDirectory(path: dir.at("data\(i)")), database: db)
            } catch {
                failures.withLock { $0.append("\(error)") }
            }
        }
        #expect(failures.withLock { $0 } == [])
        let db: any MetadataDatabase =
            try url.map { try PostgresDatabase(url: $0) } ?? SQLiteMetadataDatabase(path: dir.at("shared.sqlite"))
        let rows = try db.read { try $0.query("SELECT version FROM schema_version ORDER BY version", []) }
        #expect(rows.compactMap { $0["version"]?.int } == Array(1...Repository.schemaVersion))
    }

    @Test(arguments: Backend.databases) func adminInitMakesOneFirstAdminTokenEvenWhenRacedAndRefusesASecond(
        _ backend: Backend
    ) throws {
        let dir = try TemporaryDirectory("admin-init")
        defer { dir.remove() }
        let url = backend == .postgresql ? try PostgresCluster.shared().createDatabase("admininit") : nil
        let path = dir.at("meta.sqlite")
        @Sendable func open() throws -> any MetadataDatabase {
            try url.map { try PostgresDatabase(url: $0) } ?? SQLiteMetadataDatabase(path: path)
        }
        let outcomes = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 3) { _ in
            do {
                _ = try Tokens.createInitialAdmin(in: open())
                outcomes.withLock { $0.append("made") }
            } catch let e as BacklotError where e.code == .conflict {
                outcomes.withLock { $0.append("refused") }
            } catch {
                outcomes.withLock { $0.append("\(error)") }
            }
        }
        #expect(outcomes.withLock { $0.sorted() } == ["made", "refused", "refused"])
        let admins = try open().read { try $0.query("SELECT COUNT(*) AS n FROM tokens WHERE role = 'admin'", []) }
        #expect(admins.first?["n"] == .integer(1))
    }

    @Test(.requires(.postgres)) func concurrentReadThenWriteTransactionsLoseNoUpdate() throws {
        let url = try PostgresCluster.shared().createDatabase("counter")
        let setup = try PostgresDatabase(url: url)
        try setup.transaction { tx in
            try tx.execute("CREATE TABLE counter (id BIGINT PRIMARY KEY, n BIGINT NOT NULL)")
            try tx.run("INSERT INTO counter VALUES (1, 0)")
        }
        let writers = 3
        let increments = 20
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: writers) { _ in
            do {
                let db = try PostgresDatabase(url: url)  // a connection each, like separate servers
                for _ in 0..<increments {
                    try db.transaction { tx in
                        let n = try tx.query("SELECT n FROM counter WHERE id = 1", []).first?["n"]?.int ?? -1
                        try tx.run("UPDATE counter SET n = ? WHERE id = 1", [.integer(n + 1)])
                    }
                }
            } catch {
                failures.withLock { $0.append("\(error)") }
            }
        }
        #expect(failures.withLock { $0 } == [])
        #expect(
            try setup.read { try $0.query("SELECT n FROM counter", []) }.first?["n"]
                == .integer(Int64(writers * increments)))
    }

    /// One `PostgresDatabase` used by more threads than it has connections: each call holds a
    /// connection of the pool alone (the proof of `PostgresDatabase.Connection`), so the threads
    /// wait for one, none uses another's, and no increment is lost.
    @Test(.requires(.postgres)) func onePoolIsUsedByMoreThreadsThanItHasConnections() throws {
        let db = try PostgresDatabase(
            url: PostgresCluster.shared().createDatabase("onepool"), maximumConnections: 2)
        try db.transaction { tx in
            try tx.execute("CREATE TABLE counter (id BIGINT PRIMARY KEY, n BIGINT NOT NULL)")
            try tx.run("INSERT INTO counter VALUES (1, 0)")
        }
        let threads = 6
        let increments = 15
        let failures = Mutex<[String]>([])
        onThreadsOfTheirOwn(threads) { _ in
            do {
                for _ in 0..<increments {
                    try db.transaction { tx in
                        // Locked for the transaction: a connection shared by two calls would
                        // run one's UPDATE inside the other's transaction.
                        let n =
                            try tx.query("SELECT n FROM counter WHERE id = 1 FOR UPDATE", []).first?["n"]?.int ?? -1
                        try tx.run("UPDATE counter SET n = ? WHERE id = 1", [.integer(n + 1)])
                    }
                    _ = try db.read { try $0.query("SELECT n FROM counter", []) }
                }
            } catch {
                failures.withLock { $0.append("\(error)") }
            }
        }
        #expect(failures.withLock { $0 } == [])
        #expect(
            try db.read { try $0.query("SELECT n FROM counter", []) }.first?["n"]
                == .integer(Int64(threads * increments)))
    }

    @Test(.requires(.postgres)) func aRestartedServerFailsTheCallDuringTheOutageAndTheNextOneWorks() throws {
        // A cluster of its own: stopping the shared one would disturb other tests.
        let cluster = try PostgresCluster()
        defer { cluster.stop() }
        let dir = try TemporaryDirectory("restart")
        defer { dir.remove() }
        let repo = try Repository(
            directory: RepositoryDirectory(path: dir.at("data")),
            database: PostgresDatabase(url: cluster.createDatabase("restart")))
        try repo.apps.create("com.example.before")

        try cluster.stopServer()
        #expect { try repo.apps.ids() } throws: {
            let e = $0 as? BacklotError
            return e?.code == .unavailable && e?.message.contains("127.0.0.1:\(cluster.port)") == true
        }
        #expect { try repo.apps.create("com.example.during") } throws: { ($0 as? BacklotError)?.code == .unavailable }
        try cluster.start()
        #expect(try repo.apps.ids() == ["com.example.before"])
        try repo.apps.create("com.example.after")

        // A restart between two calls: the next call finds the connection dead, connects again and runs.
        try cluster.stopServer()
        try cluster.start()
        #expect(try repo.apps.ids() == ["com.example.after", "com.example.before"])
        try repo.apps.createPack(app: "com.example.after", id: "Levels")
        #expect(try repo.apps.packs(app: "com.example.after") == ["Levels"])
    }

    @Test(.requires(.postgres)) func aWrongPasswordSaysAuthenticationFailedForThatUser() throws {
        let cluster = try PostgresCluster.shared()
        let role = "alice\(UInt32.random(in: 0...UInt32.max))"
        try cluster.administer("CREATE ROLE \(role) LOGIN PASSWORD 'right-password'")
        let url = cluster.url(database: "postgres", user: role, password: "wrong-password")
        #expect { _ = try PostgresDatabase(url: url) } throws: {
            guard let e = $0 as? BacklotError else { return false }
            return e.code == .forbidden && e.message.contains("authentication failed for user \"\(role)\"")
                && e.message.contains("127.0.0.1:\(cluster.port)/postgres") && !e.description.contains("wrong-password")
        }
        // The right password works.
        let db = try PostgresDatabase(url: cluster.url(database: "postgres", user: role, password: "right-password"))
        #expect(try db.read { try $0.query("SELECT current_user AS u", []) }.first?["u"] == .text(role))
    }

    @Test func anUnreachableServerIsNamedByHostPortAndDatabase() throws {
        // A port nobody listens on: bound (never listening, so connections are refused) for as long as the test runs.
        let nobody = try FreePort.bound()
        defer { nobody.release() }
        let port = nobody.port
        #expect {
            _ = try PostgresDatabase(url: "postgresql://backlot@127.0.0.1:\(port)/meta", connectTimeout: 2)
        } throws: {
            guard let e = $0 as? BacklotError else { return false }
            return e.code == .unavailable && e.message.contains("127.0.0.1:\(port)/meta") && e.exitStatus == 1
        }
        #expect { _ = try PostgresDatabase(url: "postgresql://[nonsense") } throws: {
            ($0 as? BacklotError)?.code == .invalidInput
        }
    }
}

extension MetadataBackendTests {
    /// A database at schema step 3 (the last release before token ids) with tokens, an app and a
    /// request upgrades to step 4 in place, on SQLite and PostgreSQL: the tokens keep working and get ids.
    @Test(arguments: Backend.databases) func aStepThreeDatabaseWithTokensUpgradesToTokenIDs(_ backend: Backend) throws {
        let dir = try TemporaryDirectory("step3")
        defer { dir.remove() }
        try FileSystem.makeDirectory(dir.at("data"), mode: 0o700)
        let database: any MetadataDatabase =
            try backend.database("step3") ?? SQLiteMetadataDatabase(path: dir.at("data/meta.sqlite"), mode: 0o600)
        try SchemaMigration.apply(Array(Repository.schemaSteps.prefix(3)), to: database)
        let secret = "blt_old_admin_secret"
        try database.transaction { tx in
            try tx.run(
                "INSERT INTO tokens(hash, role, label, created) VALUES (?, 'admin', 'first', 10)",
                [.text(Tokens.hash(secret))])
            try tx.run("INSERT INTO tokens(hash, role, label, created) VALUES ('other', 'reader', 'second', 20)")
            try tx.run("INSERT INTO apps(id, created) VALUES ('a', 1)")
        }
        let repo = try Repository(
            directory: RepositoryDirectory(path: dir.at("data")), database: backend == .sqlite ? nil : database)
        let caller = try repo.tokens.authenticate(secret)
        #expect(caller.role == .admin && caller.label == "first")
        #expect(try repo.tokens.list().map(\.label) == ["first", "second"])
        #expect(Set(try repo.tokens.list().map(\.id)).count == 2)
        #expect(try repo.apps.app("a").fourEyes == false)
        // New tokens get the next ids.
        let issued = try repo.tokens.issue(role: .reader)
        #expect(issued.id > (try repo.tokens.list().map(\.id).filter { $0 != issued.id }.max() ?? 0))
        // Step 5: the audit trail and the download counts start empty and record from the upgrade on.
        let entries = try repo.audit.entries().entries
        #expect(entries.map(\.action) == ["token.create"])
        #expect(entries.first?.details["tokenId"] == String(issued.id) && entries.first?.tokenID == nil)
        #expect(try repo.downloads.report(app: "a").rows.isEmpty)
        try repo.downloads.add([
            DownloadHit(.catalog(app: "a"), day: DownloadCounts.utcDay(Date()), requests: 2, bytes: 10)
        ])
        #expect(try repo.downloads.report(app: "a").rows.map(\.requests) == [2])
    }

    /// Step 13: a delta recorded before targets were gives its version's pack digest as its
    /// target; one whose version has none (it failed at the end of its processing) has none.
    @Test(arguments: Backend.databases) func aStepTwelveDatabaseRecordsTheTargetsOfItsDeltas(_ backend: Backend) throws
    {
        let dir = try TemporaryDirectory("step12")
        defer { dir.remove() }
        try FileSystem.makeDirectory(dir.at("data"), mode: 0o700)
        let database: any MetadataDatabase =
            try backend.database("step12") ?? SQLiteMetadataDatabase(path: dir.at("data/meta.sqlite"), mode: 0o600)
        try SchemaMigration.apply(Array(Repository.schemaSteps.prefix(12)), to: database)
        try database.transaction { tx in
            try tx.run("INSERT INTO apps(id, created) VALUES ('a', 1)")
            try tx.run("INSERT INTO packs(app, id, created) VALUES ('a', 'P', 1)")
            for (number, state, digest) in [(1, "COMPLETE", "d1"), (2, "FAILED", nil)] as [(Int64, String, String?)] {
                try tx.run(
                    "INSERT INTO versions(app, pack, number, state, declared_size, created, index_sha256) VALUES ('a', 'P', ?, ?, 10, 1, ?)",
                    [.integer(number), .text(state), digest.map { .text($0) } ?? .null])
                try tx.run(
                    "INSERT INTO published_deltas(sha256, app, pack, version) VALUES (?, 'a', 'P', ?)",
                    [.text("delta\(number)"), .integer(number)])
            }
        }
        let repo = try Repository(
            directory: RepositoryDirectory(path: dir.at("data")), database: backend == .sqlite ? nil : database)
        let rows = try repo.db.read { try $0.query("SELECT sha256, target FROM published_deltas ORDER BY sha256", []) }
        #expect(rows.map { $0["sha256"]?.string } == ["delta1", "delta2"])
        #expect(rows.map { $0["target"]?.string } == ["d1", nil])
    }
}
