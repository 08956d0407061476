import BacklotBasics
import BacklotJSON
import BacklotPostgres
import BacklotRepository
import BacklotStore

/// `backlot admin init --database URL`: creates the first admin token of a repository whose
/// metadata is in PostgreSQL and prints it once.
struct AdminInitCommand: Command {
    static let spec = CommandSpec(
        name: "admin init",
        summary:
            "Create the first admin token in a PostgreSQL metadata database and print it once (refused if one exists).",
        discussion: """
            With --database, `backlot serve` writes no admin-token file (several servers share the
            database, and none of their disks is the place for it): run this once instead, and keep the
            token it prints; only its SHA-256 is stored. The schema is created or upgraded first. The
            password comes from the URI, PGPASSWORD or ~/.pgpass (libpq reads them).
            """,
        options: [database, label, person, jsonFlag])
    static let database = Option<String>(
        "database", "URL", help: "The metadata database: postgresql://USER@HOST:PORT/DB.")
    static let label = Option<String>("label", "TEXT", default: "initial admin", help: "A label stored with the token.")
    static let person = Option<String>(
        "person", "NAME", default: Tokens.initialAdminPerson,
        help: "Who the token belongs to (an app's four-eyes rule compares people).")

    static func run(_ arguments: ParsedArguments, io: any CommandIO) throws {
        let database = try openDatabase(arguments[Self.database])
        let token = try Tokens.createInitialAdmin(in: database, label: arguments[label], person: arguments[person])
        if arguments[jsonFlag] {
            try io.outJSON(Output(token: token, role: "admin", label: arguments[label]))
            return
        }
        io.out(token + "\n")
        io.err("This is the only time the admin token is shown: keep it (export BACKLOT_TOKEN=…).\n")
    }

    /// Opens `--database URL`: PostgreSQL for `postgresql://` and `postgres://` URIs.
    /// - Throws: ``BacklotError/Code/usage`` for another scheme; what ``PostgresDatabase/init(url:connectTimeout:)``
    ///   throws (unreachable: `unavailable`, naming host:port/db; wrong password: `forbidden`, naming the user).
    static func openDatabase(_ url: String) throws -> any MetadataDatabase {
        guard url.hasPrefix("postgresql://") || url.hasPrefix("postgres://") else {
            throw BacklotError(
                .usage, "--database takes a PostgreSQL URI, postgresql://USER@HOST:PORT/DB", context: "--database",
                hint: "leave --database out for SQLite in the data folder (DIR/meta.sqlite)")
        }
        return try PostgresDatabase(url: url)
    }
}

extension AdminInitCommand {
    /// `admin init --json`: the first admin token, shown this once.
    struct Output: Encodable {
        let token: String
        let role: String
        let label: String
    }
}
