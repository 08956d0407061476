import BacklotBasics
import BacklotPostgres
import BacklotStore
import BacklotTestSupport
import Testing
@testable import BacklotRepository

/// The metadata backends every repository test runs on: SQLite (the default, in the data folder)
/// and PostgreSQL 15 (a fresh database per test in one throwaway cluster per test process).
enum Backend: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case sqlite
    case postgresql

    var testDescription: String { rawValue }

    /// The database a repository at `path` uses: nil for SQLite (the default, DIR/meta.sqlite),
    /// a new PostgreSQL database otherwise.
    func database(_ label: String) throws -> (any MetadataDatabase)? {
        switch self {
        case .sqlite: nil
        case .postgresql: try PostgresDatabase(url: PostgresCluster.shared().createDatabase(label))
        }
    }

    /// A repository at `path` on this backend. On PostgreSQL the first admin token is created
    /// too (what `backlot admin init` does), so both backends start with one.
    func repository(at path: String, label: String = "repo", quotaBytes: UInt64 = 200_000_000_000, maximumPacksPerApp: Int = 100) throws -> Repository {
        let repo = try Repository(directory: RepositoryDirectory(path: path), quotaBytes: quotaBytes, maximumPacksPerApp: maximumPacksPerApp,
                                  database: database(label))
        if self == .postgresql { _ = try repo.createInitialAdminToken() }
        return repo
    }
}
