import BacklotBasics
import BacklotStore
import CPostgreSQL
import Foundation
import Synchronization

extension PostgresDatabase {
    /// What the last statements of a call met, kept by reference so that the copy of the
    /// connection handed to a transaction's body reports back to ``PostgresDatabase``.
    // One call at a time uses it (the connection's slot in the pool); the `Mutex` makes that checked
    // rather than argued, at the price of an uncontended lock per statement.
    final class CallState: Sendable {
        private struct Values {
            var sqlState: String?
            var connectionLost = false
            var statements = 0
        }
        private let values = Mutex(Values())

        /// The SQLSTATE of the last failure.
        var sqlState: String? {
            get { values.withLock { $0.sqlState } }
            set { values.withLock { $0.sqlState = newValue } }
        }
        /// The connection was found dead (the next call resets it).
        var connectionLost: Bool {
            get { values.withLock { $0.connectionLost } }
            set { values.withLock { $0.connectionLost = newValue } }
        }
        /// Statements that completed since ``clear()``.
        var statements: Int {
            get { values.withLock { $0.statements } }
            set { values.withLock { $0.statements = newValue } }
        }

        func clear() {
            values.withLock {
                $0.sqlState = nil
                $0.statements = 0
            }
        }
    }

    /// The connection, usable only inside ``PostgresDatabase/transaction(_:)`` or ``PostgresDatabase/read(_:)``.
    // Safe because: the libpq handle (`PGconn`, which libpq allows on any thread but not on two at once) is used
    // only by the call that holds its slot in `PostgresDatabase`'s pool.
    // Tested: `MetadataBackendTests.onePoolIsUsedByMoreThreadsThanItHasConnections`.
    struct Connection: MetadataConnection, @unchecked Sendable {
        let handle: OpaquePointer?
        let name: String
        let state = CallState()

        var dialect: SQLDialect { .postgresql }

        /// Connects again when the last call found the connection dead, or libpq says it is.
        /// - Throws: ``BacklotError/Code/unavailable`` while the server cannot be reached.
        func reconnectIfNeeded() throws {
            guard state.connectionLost || PQstatus(handle) != CONNECTION_OK else { return }
            PQreset(handle)
            guard PQstatus(handle) == CONNECTION_OK else {
                state.connectionLost = true
                let message = PostgresDatabase.trimmed(String(cString: PQerrorMessage(handle)))
                let user = PQuser(handle).map { String(cString: $0) } ?? "?"
                throw PostgresDatabase.connectionFailure(message, name: name, user: user)
            }
            state.connectionLost = false
            _ = PQexec(handle, "SET client_min_messages = warning; SET client_encoding = 'UTF8'").map { PQclear($0) }
        }

        func execute(_ sql: String) throws {
            let result = PQexec(handle, sql)
            defer { PQclear(result) }
            let status = PQresultStatus(result)
            guard result != nil, status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
                throw failure(result, sql)
            }
            state.statements += 1
        }

        @discardableResult
        func run(_ sql: String, _ bindings: [Database.Value]) throws -> Int {
            try perform(sql, bindings) { result in Int(String(cString: PQcmdTuples(result))) ?? 0 }
        }

        func query(_ sql: String, _ bindings: [Database.Value]) throws -> [Database.Row] {
            try perform(sql, bindings) { result in try Self.rows(of: result, sql: sql) }
        }

        func lockUntilCommit(_ key: String) throws {
            try run("SELECT pg_advisory_xact_lock(hashtextextended(?, 0))", [.text(key)])
        }

        /// Runs one statement with `PQexecParams` and hands its result to `read`.
        func perform<T>(_ sql: String, _ bindings: [Database.Value], _ read: (OpaquePointer?) throws -> T) throws -> T {
            let numbered = try PostgresPlaceholders.numbered(sql, expecting: bindings.count)
            var parameters: [Parameter] = []
            defer { for p in parameters { p.storage?.deallocate() } }
            for value in bindings { parameters.append(try Parameter(value)) }
            let count = try CheckedInteger.convert(
                parameters.count, to: Int32.self, "the number of parameters", context: name)
            let values = parameters.map { UnsafePointer($0.storage) }
            let result = PQexecParams(
                handle, numbered, count, parameters.map(\.type), values, parameters.map(\.length),
                parameters.map(\.format), 0)
            defer { PQclear(result) }
            let status = PQresultStatus(result)
            guard result != nil, status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
                throw failure(result, sql)
            }
            state.statements += 1
            return try read(result)
        }

        /// The error for a failed statement, recording its SQLSTATE and whether the connection died.
        func failure(_ result: OpaquePointer?, _ sql: String) -> BacklotError {
            func field(_ code: Character) -> String? {
                guard let result, let p = PQresultErrorField(result, Int32(code.asciiValue ?? 0)) else { return nil }
                return String(cString: p)
            }
            let sqlState = field("C")
            state.sqlState = sqlState
            let message = field("M") ?? PostgresDatabase.trimmed(String(cString: PQerrorMessage(handle)))
            let detail = field("D").map { " (\($0))" } ?? ""
            // Class 08: connection exceptions; 57P01–57P03: the server shut down or is starting.
            let lost =
                PQstatus(handle) != CONNECTION_OK || sqlState?.hasPrefix("08") == true
                || ["57P01", "57P02", "57P03"].contains(sqlState ?? "")
            if lost {
                state.connectionLost = true
                return BacklotError(
                    .unavailable, "the PostgreSQL connection was lost: \(message)", context: name,
                    hint: "the server stopped or restarted; the next request connects again")
            }
            switch sqlState {
            case "23505", "23503":
                return BacklotError(.conflict, message + detail, context: name)
            case "40001", "40P01":
                return BacklotError(
                    .conflict, "a concurrent change interfered: \(message)", context: name, hint: "try again")
            case "53300":
                return BacklotError(
                    .unavailable, "PostgreSQL has no connection slot free: \(message)", context: name,
                    hint: "try again later")
            default:
                return BacklotError(
                    .io, "PostgreSQL: \(message)\(detail) [\(sqlState ?? "no SQLSTATE")] (in \(sql.prefix(60)))",
                    context: name)
            }
        }

        /// The rows of a result, each value converted by its column's type.
        static func rows(of result: OpaquePointer?, sql: String) throws -> [Database.Row] {
            let rowCount = Int(PQntuples(result))
            let columnCount = Int(PQnfields(result))
            guard rowCount > 0, columnCount > 0 else { return [] }
            let names = (0..<columnCount).map { String(cString: PQfname(result, Int32($0))) }
            let types = (0..<columnCount).map { PQftype(result, Int32($0)) }
            var rows: [Database.Row] = []
            rows.reserveCapacity(rowCount)
            for r in 0..<Int32(rowCount) {
                var row: Database.Row = [:]
                for c in 0..<columnCount {
                    let column = Int32(c)
                    if PQgetisnull(result, r, column) == 1 {
                        row[names[c]] = .null
                        continue
                    }
                    let length = Int(PQgetlength(result, r, column))
                    let bytes = UnsafeRawBufferPointer(start: PQgetvalue(result, r, column), count: length)
                    row[names[c]] = try PostgresValue.decode(bytes, type: types[c], column: names[c], sql: sql)
                }
                rows.append(row)
            }
            return rows
        }
    }

    /// One statement parameter as libpq takes it: text in text format, bytes in binary format.
    struct Parameter {
        var storage: UnsafeMutablePointer<CChar>?
        var length: Int32
        var format: Int32
        var type: Oid

        init(_ value: Database.Value) throws {
            switch value {
            case .null:
                self.init(storage: nil, length: 0, format: 0, type: 0)
            case .integer(let v):
                self.init(text: String(v), type: PostgresValue.int8)
            case .real(let v):
                let text = v.isNaN ? "NaN" : v == .infinity ? "Infinity" : v == -.infinity ? "-Infinity" : "\(v)"
                self.init(text: text, type: PostgresValue.float8)
            case .text(let v):
                guard !v.utf8.contains(0) else {
                    throw BacklotError(
                        .invalidInput, "text holding a NUL character cannot be stored in PostgreSQL",
                        context: String(v.prefix(40)))
                }
                self.init(text: v, type: 0)  // the server infers the type from where it goes
            case .blob(let v):
                let length = try CheckedInteger.convert(v.count, to: Int32.self, "the size of a stored value")
                let storage = UnsafeMutablePointer<CChar>.allocate(capacity: max(1, v.count))
                v.withUnsafeBytes { raw in
                    UnsafeMutableRawPointer(storage).copyMemory(
                        from: raw.baseAddress ?? UnsafeRawPointer(storage), byteCount: v.count)
                }
                self.init(storage: storage, length: length, format: 1, type: PostgresValue.bytea)
            }
        }

        init(storage: UnsafeMutablePointer<CChar>?, length: Int32, format: Int32, type: Oid) {
            self.storage = storage
            self.length = length
            self.format = format
            self.type = type
        }

        init(text: String, type: Oid) {
            let utf8 = Array(text.utf8)
            let storage = UnsafeMutablePointer<CChar>.allocate(capacity: utf8.count + 1)
            for (i, b) in utf8.enumerated() { storage[i] = CChar(bitPattern: b) }
            storage[utf8.count] = 0
            self.init(storage: storage, length: Int32(clamping: utf8.count), format: 0, type: type)
        }
    }
}
