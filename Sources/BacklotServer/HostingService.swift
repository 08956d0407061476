import BacklotBasics
import BacklotHTTPServer
import BacklotProtocol
import BacklotRepository
import BacklotStore
import Foundation
import Synchronization

/// A running server of a repository, composed in one place: the ``Repository`` over its stores,
/// its catalogs re-signed at start (a crash may have left one behind the database), the
/// ``HostingServer`` in front of it, and the work every server of one repository shares
/// (processing what a server that died left, re-signing catalogs before they expire, one server
/// at a time), started in that order and stopped in reverse by ``stop(grace:)``. `backlot serve`
/// turns its options into a ``Launch`` and ``launch(_:events:)`` binds, opens and starts it all.
///
/// ```swift
/// let configuration = HostingService.Configuration(
///     directory: try RepositoryDirectory(path: "data"), listener: try ListeningSocket(host: "127.0.0.1", port: 0))
/// let service = try HostingService(configuration) { line in print(line) }
/// print(service.server.baseURL)
/// service.stop(grace: 5)   // requests in flight get 5 s; nothing of it runs afterwards
/// ```
public final class HostingService: Sendable {
    /// What the service is made of and how it behaves; the stores default to the data folder's own.
    public struct Configuration: Sendable {
        public var directory: RepositoryDirectory
        /// The metadata database; nil: the data folder's SQLite.
        public var database: (any MetadataDatabase)?
        /// Where the published tree and the archives live; nil: the data folder.
        public var tree: (any PublishedTreeStore)?
        public var archives: (any ArchiveStore)?
        /// The socket the server answers on, bound before anything else started.
        public var listener: ListeningSocket
        public var http: HTTPServer.Configuration
        public var maximumInstallSize = Repository.defaultMaximumInstallSize
        /// Seconds a server holds a lease on shared work; the shared work runs every half of it (1–60 s).
        public var leaseSeconds: Double = Repository.defaultLeaseDuration
        public var adoptStorage = false
        /// How many earlier versions each new one gets deltas from.
        public var deltaBases = Publication.defaultDeltaBases
        /// The URL clients reach the server at (catalogs name packs under it); nil: the listener's own.
        public var publicURL: String?
        public var treeHeaders = PublishedTreeHeaders()
        public var metrics = MetricsAccess()
        public var loadShedding = LoadShedding()
        /// Uploads left unfinished this long are removed by the shared work.
        public var abandonedUploadsAfter = Repository.defaultAbandonedUploadsAfter
        /// The version `/metrics` and the dashboard show.
        public var version = "unknown"
        /// One line per request answered; nil: none.
        public var accessLog: (@Sendable (String) -> Void)?

        public init(directory: RepositoryDirectory, listener: ListeningSocket) {
            self.directory = directory
            self.listener = listener
            self.http = HTTPServer.Configuration(port: listener.port)
        }
    }

    public let repository: Repository
    public let server: HostingServer
    private let sharedWork: RepeatingTimer

    /// Opens the repository, re-signs its catalogs, starts the server and the shared work.
    /// - Parameter events: the repository's event lines and the shared work's failures.
    /// - Throws: what ``Repository/init(directory:quotaBytes:maximumPacksPerApp:maximumInstallSize:processingWorkers:database:tree:archives:leaseDuration:adoptStorage:)``
    ///   and ``HostingServer`` throw (a database that cannot be reached, storage another repository
    ///   records, TLS that does not load); nothing is left running then.
    public init(_ configuration: Configuration, events: @escaping @Sendable (String) -> Void) throws {
        let c = configuration
        let repository = try Repository(
            directory: c.directory, maximumInstallSize: c.maximumInstallSize, database: c.database, tree: c.tree,
            archives: c.archives, leaseDuration: c.leaseSeconds, adoptStorage: c.adoptStorage)
        var started = false
        defer { if !started { repository.uploads.stopProcessing() } }
        repository.onEvent(events)
        repository.publication.setDeltaBases(c.deltaBases)
        repository.publication.setPublicURL(
            c.publicURL ?? HostingServer.baseURL(host: c.http.host, port: c.listener.port, tls: c.http.tls != nil))
        // Every channel that has a catalog or a release, signed again: a crash may have left one
        // behind its database state.
        try repository.publication.resign(margin: .infinity)
        server = try HostingServer(
            repository: repository, listening: c.listener, configuration: c.http, treeHeaders: c.treeHeaders,
            accessLog: c.accessLog, metricsAccess: c.metrics, version: c.version, loadShedding: c.loadShedding)
        self.repository = repository
        let lastResign = Mutex(ContinuousClock.now)
        // Garbage collection by the lease holder, at its first round and then hourly (counted
        // from the last one that succeeded).
        let lastCollection = Mutex<ContinuousClock.Instant?>(nil)
        let abandonedAfter = c.abandonedUploadsAfter
        sharedWork = RepeatingTimer(label: "backlot.shared-work", every: max(1, min(60, c.leaseSeconds / 2))) {
            let due = lastResign.withLock { last in
                guard ContinuousClock.now - last >= .seconds(60) else { return false }
                last = .now
                return true
            }
            let collecting =
                due && lastCollection.withLock { $0.map { ContinuousClock.now - $0 >= .seconds(3600) } ?? true }
            do {
                let collected = try repository.shareWork(
                    resigning: due, abandonedUploadsAfter: abandonedAfter, collectingGarbage: collecting)
                if collected { lastCollection.withLock { $0 = .now } }
            } catch {
                events("background work: \(error)")
            }
        }
        started = true
    }

    /// Stops in the reverse order of the start: the shared work (waited for), the server (requests
    /// in flight get `grace` seconds), processing, and the re-signing lease is let go. Nothing of
    /// the service runs when it returns: exiting then cannot tear OpenSSL down under libcurl or
    /// libpq on another thread.
    public func stop(grace: Double = 5) {
        sharedWork.cancelAndWait()
        server.stop(grace: grace)
        repository.uploads.stopProcessing()
        repository.leases.release(Repository.resigningLease)
    }
}
