import BacklotBasics
import BacklotPostgres
import BacklotStore
import BacklotTestSupport
import Testing

@testable import BacklotRepository

/// The backends every repository test runs on: SQLite and the data folder (the default);
/// PostgreSQL 15 (a fresh database per test in one throwaway cluster per test process) and the
/// folder; PostgreSQL with the published tree, uploads and archives in a bucket of a real
/// radosgw (a fresh bucket per test), as several servers share them.
enum Backend: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case sqlite
    case postgresql
    case bucket = "postgresql+s3"

    var testDescription: String { rawValue }

    /// The metadata backends alone (for tests of the database layer).
    static let databases: [Backend] = [.sqlite, .postgresql]

    /// Whether the metadata is in PostgreSQL (no admin-token file then).
    var isShared: Bool { self != .sqlite }

    /// The database a repository at `path` uses: nil for SQLite (the default, DIR/meta.sqlite),
    /// a new PostgreSQL database otherwise.
    func database(_ label: String) throws -> (any MetadataDatabase)? {
        switch self {
        case .sqlite: nil
        case .postgresql, .bucket: try PostgresDatabase(url: PostgresCluster.shared().createDatabase(label))
        }
    }

    /// The tree and archives of a new bucket (`.bucket`), nil otherwise (the data folder).
    func storage(_ label: String) throws -> (tree: S3PublishedTree, archives: S3ArchiveStore)? {
        guard self == .bucket else { return nil }
        let (client, bucket) = try ObjectStore.shared().newBucket(label)
        let tree = try S3PublishedTree(client: client, bucket: bucket, prefix: "content")
        return (tree, try S3ArchiveStore(beside: tree, partSize: 5 << 20))
    }

    /// A repository at `path` on this backend. On PostgreSQL the first admin token is created
    /// too (what `backlot admin init` does), so every backend starts with one.
    func repository(
        at path: String, label: String = "repo", quotaBytes: UInt64 = 200_000_000_000, maximumPacksPerApp: Int = 100
    ) throws -> Repository {
        let storage = try storage(label)
        let repo = try Repository(
            directory: RepositoryDirectory(path: path), quotaBytes: quotaBytes, maximumPacksPerApp: maximumPacksPerApp,
            database: database(label), tree: storage?.tree, archives: storage?.archives)
        if isShared { _ = try repo.tokens.createInitialAdmin() }
        return repo
    }
}
