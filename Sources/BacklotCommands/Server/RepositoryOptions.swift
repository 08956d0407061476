import BacklotBasics
import BacklotRepository
import BacklotS3
import BacklotStore

/// The options that say where a repository lives, shared by `serve`, `catalog resign` and
/// `keys rotate`: the data folder, the metadata database, the bucket of the published tree and
/// the archives, and the signing key.
enum RepositoryOptions {
    static let data = Option<String>("data", "DIR", help: "The repository's data folder.")
    static let database = Option<String?>(
        "database", "URL",
        help: "Metadata in PostgreSQL: postgresql://USER@HOST:PORT/DB (default: SQLite in DIR/meta.sqlite).")
    static let storage = Option<String?>(
        "storage", "s3://BUCKET[/PREFIX]",
        help: "Keep the published tree, uploads and archives in this bucket (default: DIR).")
    static let endpoint = Option<String?>(
        "s3-endpoint", "URL", help: "The object store's URL, with --storage (https://s3.example.net).")
    static let region = Option<String?>(
        "s3-region", "REGION", help: "The region requests are signed for (default us-east-1).")
    static let pathStyle = Flag("s3-path-style", help: "Address the bucket as ENDPOINT/BUCKET instead of BUCKET.HOST.")
    static let signingKey = Option<String?>(
        "signing-key", "FILE",
        help:
            "The Ed25519 signing key (mode 0600), shared by every server of one repository (default: DIR/keys/signing.key)."
    )

    static let options: [any OptionDeclaration] = [data, database, storage, endpoint, region, pathStyle, signingKey]

    /// `--storage` with its `--s3-*` options, checked before anything starts.
    static func storage(
        _ arguments: ParsedArguments, command: String
    ) throws -> (url: String, endpoint: String, region: String, pathStyle: Bool)? {
        guard let url = arguments[storage] else {
            for option in [endpoint, region] where arguments.has(option) {
                throw BacklotError(
                    .usage, "--\(option.info.name) needs --storage s3://BUCKET[/PREFIX]", context: "backlot \(command)")
            }
            return nil
        }
        _ = try S3PublishedTree.parseStorage(url)
        guard let endpoint = arguments[endpoint] else {
            throw BacklotError(
                .usage, "--storage \(url) needs --s3-endpoint URL", context: "backlot \(command)",
                hint: "give the object store's URL, for example --s3-endpoint https://s3.eu-west-1.amazonaws.com")
        }
        return (url, endpoint, arguments[region] ?? "us-east-1", arguments[pathStyle])
    }

    /// Connects to the bucket of `--storage` (checking that it exists and that the credentials may
    /// use it) and returns the published tree and the archive store in it; nil without `--storage`.
    static func bucket(
        _ arguments: ParsedArguments, command: String, headers: PublishedTreeHeaders = PublishedTreeHeaders()
    )
        throws -> (tree: S3PublishedTree, archives: S3ArchiveStore)?
    {
        guard let s = try storage(arguments, command: command) else { return nil }
        return try connect(s, headers: headers)
    }

    /// Connects to the bucket of a `--storage` already read (``storage(_:command:)``), with the
    /// credentials of the environment.
    static func connect(
        _ s: (url: String, endpoint: String, region: String, pathStyle: Bool), headers: PublishedTreeHeaders
    ) throws -> (tree: S3PublishedTree, archives: S3ArchiveStore) {
        let tree = try S3PublishedTree.connect(
            storage: s.url, endpoint: s.endpoint, region: s.region, pathStyle: s.pathStyle,
            credentials: S3Credentials.fromEnvironment(), headers: headers)
        return (tree, try S3ArchiveStore(beside: tree))
    }

    /// The data folder of `--data`, with the signing key of `--signing-key` when given.
    static func directory(_ arguments: ParsedArguments) throws -> RepositoryDirectory {
        try RepositoryDirectory(path: arguments[data], signingKeyFile: arguments[signingKey])
    }

    /// Opens the repository for a command that runs beside no server (`catalog resign`, `keys rotate`).
    static func open(_ arguments: ParsedArguments, command: String) throws -> (Repository, FileLock) {
        let bucket = try bucket(arguments, command: command)
        let lock = try RepositoryLock.acquire(dataFolder: arguments[data], for: "backlot \(command)")
        do {
            let repository = try Repository(
                directory: try directory(arguments),
                database: try arguments[database].map(AdminInitCommand.openDatabase),
                tree: bucket?.tree, archives: bucket?.archives)
            return (repository, lock)
        } catch {
            lock.release()
            throw error
        }
    }
}
