import BacklotBasics
import BacklotStore
import BacklotTestSupport
import Foundation
import Synchronization
import Testing

/// The SQLite wrapper every container, agent and server database goes through.
@Suite struct DatabaseTests {
    @Test func aThrowingTransactionLeavesNothing() throws {
        let dir = try TemporaryDirectory("db-rollback")
        defer { dir.remove() }
        let db = try Database(path: dir.at("t.sqlite"))
        try db.transaction { try $0.execute("CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER NOT NULL)") }
        try db.transaction { _ = try $0.run("INSERT INTO t VALUES (?, ?)", [.text("a"), .integer(1)]) }
        struct Stop: Error {}
        #expect(throws: Stop.self) {
            try db.transaction { tx in
                _ = try tx.run("INSERT INTO t VALUES (?, ?)", [.text("b"), .integer(2)])
                _ = try tx.run("UPDATE t SET v = 10 WHERE k = 'a'")
                throw Stop()
            }
        }
        let rows = try db.read { try $0.query("SELECT k, v FROM t ORDER BY k") }
        #expect(rows.count == 1 && rows[0]["v"]?.int == 1)
        // A constraint violation is an error naming the database, and rolls back too.
        #expect(throws: BacklotError.self) { try db.transaction { _ = try $0.run("INSERT INTO t VALUES ('a', 3)") } }
    }

    /// A BLOB filled a piece at a time holds exactly what was given; a fill of more or fewer bytes
    /// than the BLOB was made for fails and its transaction leaves nothing.
    @Test func aBlobIsFilledPieceByPieceAndExactly() throws {
        let dir = try TemporaryDirectory("db-blob")
        defer { dir.remove() }
        let db = try Database(path: dir.at("t.sqlite"))
        try db.transaction { try $0.execute("CREATE TABLE t (k TEXT PRIMARY KEY, data BLOB NOT NULL)") }
        var g = SeededGenerator(seed: 5)
        let bytes = g.bytes(700_000)  // three pieces of 256 KiB
        func insert(_ key: String, declared: Int, given: [UInt8]) throws {
            try db.transaction { tx in
                _ = try tx.run("INSERT INTO t VALUES (?, zeroblob(?))", [.text(key), .integer(Int64(declared))])
                var at = 0
                try tx.writeBlob(table: "t", column: "data", rowid: tx.lastInsertRowID) { room in
                    let n = min(room.count, given.count - at)
                    given[at..<at + n].withUnsafeBytes { room.copyMemory(from: $0) }
                    at += n
                    return n
                }
            }
        }
        try insert("whole", declared: bytes.count, given: bytes)
        let row = try db.read { try $0.query("SELECT data FROM t WHERE k = 'whole'") }
        #expect(row.first?["data"] == .blob(bytes))
        #expect(throws: BacklotError.self) { try insert("more", declared: 1000, given: Array(bytes.prefix(1001))) }
        #expect(throws: BacklotError.self) { try insert("fewer", declared: 1000, given: Array(bytes.prefix(999))) }
        let keys = try db.read { try $0.query("SELECT k FROM t ORDER BY k") }.compactMap { $0["k"]?.string }
        #expect(keys == ["whole"])
    }

    /// A device's databases (opened through a schema) keep a small page cache; others SQLite's default.
    @Test func aSchemasDatabaseKeepsASmallPageCache() throws {
        let dir = try TemporaryDirectory("db-cache")
        defer { dir.remove() }
        let plain = try Database(path: dir.at("plain.sqlite"))
        #expect(try plain.read { try $0.query("PRAGMA cache_size") }.first?["cache_size"]?.int == -2000)
        let schema = SQLiteSchema("a test database", [.init(1, "t") { try $0.execute("CREATE TABLE t (k TEXT)") }])
        let small = try schema.open(dir.at("small.sqlite"))
        #expect(try small.read { try $0.query("PRAGMA cache_size") }.first?["cache_size"]?.int == -256)
    }

    @Test func twoHandlesOnOneFileSeeEachOthersCommits() throws {
        let dir = try TemporaryDirectory("db-two")
        defer { dir.remove() }
        let a = try Database(path: dir.at("t.sqlite"))
        let b = try Database(path: dir.at("t.sqlite"))
        try a.transaction { try $0.execute("CREATE TABLE t (n INTEGER)") }
        let writers = 2
        let each = 200
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: writers) { i in
            let db = i == 0 ? a : b
            for n in 0..<each {
                // One writer can wait out the 5 s busy timeout while the other commits (one fsync
                // each) on a slow disk: that is SQLite's answer, tried again; any other error is kept.
                while true {
                    do {
                        try db.transaction { _ = try $0.run("INSERT INTO t VALUES (?)", [.integer(Int64(n))]) }
                        break
                    } catch let e as BacklotError where e.message.contains("locked") {
                        continue
                    } catch {
                        failures.withLock { $0.append("\(error)") }
                        break
                    }
                }
            }
        }
        #expect(failures.withLock { $0 } == [])
        #expect(try b.read { try $0.query("SELECT COUNT(*) AS c FROM t") }.first?["c"]?.int == Int64(writers * each))
        #expect(try a.read { try $0.query("PRAGMA journal_mode") }.first?["journal_mode"]?.string == "wal")
    }

    /// One handle (one connection behind its `Mutex`) used by threads at once: every transaction
    /// and every read holds the connection alone, so no increment is lost and no statement of one
    /// thread runs inside another's transaction (the proof of `Database.Connection`).
    @Test func oneHandleIsUsedByThreadsAtOnce() throws {
        let dir = try TemporaryDirectory("db-one-handle")
        defer { dir.remove() }
        let db = try Database(path: dir.at("t.sqlite"))
        try db.transaction { tx in
            try tx.execute("CREATE TABLE counter (n INTEGER NOT NULL)")
            _ = try tx.run("INSERT INTO counter VALUES (0)")
        }
        let threads = 8
        let each = 50
        let failures = Mutex<[String]>([])
        onThreadsOfTheirOwn(threads) { _ in
            do {
                for _ in 0..<each {
                    // Read, then write what was read plus one: lost if two transactions interleaved.
                    try db.transaction { tx in
                        let n = try tx.query("SELECT n FROM counter").first?["n"]?.int ?? -1
                        _ = try tx.run("UPDATE counter SET n = ?", [.integer(n + 1)])
                    }
                    _ = try db.read { try $0.query("SELECT n FROM counter") }
                }
            } catch {
                failures.withLock { $0.append("\(error)") }
            }
        }
        #expect(failures.withLock { $0 } == [])
        #expect(try db.read { try $0.query("SELECT n FROM counter") }.first?["n"]?.int == Int64(threads * each))
    }

    @Test func aModeIsKeptWhateverTheUmask() throws {
        let dir = try TemporaryDirectory("db-mode")
        defer { dir.remove() }
        let db = try Database(path: dir.at("secret.sqlite"), mode: 0o600)
        try db.transaction { try $0.execute("CREATE TABLE t (n INTEGER)") }
        let mode = try FileManager.default.attributesOfItem(atPath: dir.at("secret.sqlite"))[.posixPermissions] as? Int
        #expect(mode == 0o600)
    }

    @Test func valuesKeepTheirTypeAndRange() throws {
        let dir = try TemporaryDirectory("db-values")
        defer { dir.remove() }
        let db = try Database(path: dir.at("t.sqlite"))
        try db.transaction { try $0.execute("CREATE TABLE t (i INTEGER, r REAL, s TEXT, b BLOB)") }
        try db.transaction {
            _ = try $0.run(
                "INSERT INTO t VALUES (?, ?, ?, ?)", [.integer(Int64.max), .real(0.5), .text("é\u{0}x"), .null])
        }
        let row = try #require(try db.read { try $0.query("SELECT * FROM t") }.first)
        #expect(row["i"]?.int == Int64.max)
        #expect(row["i"]?.integer(as: Int32.self) == nil, "a value out of range is nil, never a trap")
        #expect(row["s"]?.string == "é\u{0}x")
    }
}
