import BacklotBasics
import BacklotHTTPServer
import BacklotRepository
import BacklotStore
import Foundation

extension HostingService {
    /// Where a launched service's TLS comes from.
    public enum TLSSource: Sendable, Equatable {
        /// Plain HTTP (behind a load balancer or an edge that terminates TLS).
        case off
        /// The data folder's local CA (made at the first start) and a certificate it issues for
        /// the address listened on and these extra names.
        case localCA(hostnames: [String])
        /// The operator's PEM certificate chain and key.
        case files(certificate: String, key: String)
    }

    /// What a server is launched with, as values: `backlot serve` turns its options into one.
    /// ``launch(_:events:)`` uses it in an order that fails early and touches little: the port,
    /// then the bucket, then the data folder's lock (one server per folder), the folder, the
    /// database, TLS.
    public struct Launch: Sendable {
        public var dataFolder: String
        /// The signing key to use instead of the folder's own (servers that share a database).
        public var signingKeyFile: String?
        public var host = "127.0.0.1"
        /// 0 picks a free port.
        public var port: UInt16 = 8443
        /// `/metrics` served on this address alone, and the token it requires.
        public var metricsAddress: (host: String, port: UInt16)?
        public var metricsToken: String?
        public var tls = TLSSource.localCA(hostnames: [])
        /// Connects to the bucket holding the published tree and the archives, checking that it
        /// exists and that the credentials may use it; nil: the data folder holds them.
        public var openBucket: (@Sendable () throws -> (tree: any PublishedTreeStore, archives: any ArchiveStore))?
        /// Opens the metadata database; nil: the data folder's SQLite.
        public var openDatabase: (@Sendable () throws -> any MetadataDatabase)?
        /// The rest of the service's configuration (limits, threads, logs), set last.
        public var configure: @Sendable (inout Configuration) -> Void = { _ in }

        public init(dataFolder: String) { self.dataFolder = dataFolder }
    }

    /// A launched service and what its operator is told about it.
    public struct Launched: Sendable {
        public let service: HostingService
        public let directory: RepositoryDirectory
        /// The bucket's published tree, when the tree is in one.
        public let tree: (any PublishedTreeStore)?
        public let database: (any MetadataDatabase)?
        /// The local CA made or reused (``TLSSource/localCA(hostnames:)``): how to trust it.
        public let localTLS: LocalTLS?
        /// A CA certificate a client of this server trusts (the local CA's, or the given chain).
        public let trustedCA: String?
        let lock: FileLock

        /// Stops the service (``HostingService/stop(grace:)``), then lets the data folder go.
        public func stop(grace: Double = 5) {
            service.stop(grace: grace)
            lock.release()
        }
    }

    /// Binds the ports, opens the stores, takes the data folder and starts the service: the
    /// composition of `backlot serve`.
    /// - Throws: a port in use, a bucket that cannot be reached, a data folder another server
    ///   holds (``BacklotError/Code/conflict``), a database that cannot be reached, unreadable TLS
    ///   files, and what ``HostingService/init(_:events:)`` throws; nothing is left running or
    ///   held then.
    ///
    /// ```swift
    /// var launch = HostingService.Launch(dataFolder: "data")
    /// launch.port = 0
    /// let launched = try HostingService.launch(launch) { line in print(line) }
    /// print(launched.service.server.baseURL)
    /// launched.stop()
    /// ```
    public static func launch(_ launch: Launch, events: @escaping @Sendable (String) -> Void) throws -> Launched {
        // The port first: a server that cannot listen stops before it touches the data folder.
        let listener = try ListeningSocket(host: launch.host, port: launch.port)
        let metricsListener = try launch.metricsAddress.map { try ListeningSocket(host: $0.host, port: $0.port) }
        // Then the bucket, before the folder too: a missing bucket or wrong credentials stop here.
        let bucket = try launch.openBucket?()
        // Then the folder's lock: one server per data folder.
        let lock = try RepositoryLock.acquire(dataFolder: launch.dataFolder, for: "backlot serve")
        do {
            let directory = try RepositoryDirectory(path: launch.dataFolder, signingKeyFile: launch.signingKeyFile)
            let database = try launch.openDatabase?()
            var tls: (certificate: String, key: String)?
            var localTLS: LocalTLS?
            var trustedCA: String?
            switch launch.tls {
            case .off:
                break
            case .localCA(let hostnames):
                let listened = launch.host == "127.0.0.1" || launch.host == "::1" ? [] : [launch.host]
                let local = try LocalTLS.prepare(in: directory, hostnames: hostnames + listened)
                tls = (local.certificatePEM, local.privateKeyPEM)
                localTLS = local
                trustedCA = local.caCertificatePath
            case .files(let certificate, let key):
                do {
                    tls = (
                        try String(contentsOfFile: certificate, encoding: .utf8),
                        try String(contentsOfFile: key, encoding: .utf8)
                    )
                } catch {
                    throw BacklotError(
                        .invalidInput, "cannot read the certificate or key", context: "\(certificate),\(key)",
                        hint: "give readable PEM files: --tls CERT.pem,KEY.pem")
                }
                trustedCA = certificate
            }
            var configuration = Configuration(directory: directory, listener: listener)
            configuration.database = database
            configuration.tree = bucket?.tree
            configuration.archives = bucket?.archives
            configuration.http = HTTPServer.Configuration(host: launch.host, port: listener.port, tls: tls)
            configuration.metrics = MetricsAccess(token: launch.metricsToken, listening: metricsListener)
            launch.configure(&configuration)
            let service = try HostingService(configuration, events: events)
            return Launched(
                service: service, directory: directory, tree: bucket?.tree, database: database, localTLS: localTLS,
                trustedCA: trustedCA, lock: lock)
        } catch {
            lock.release()
            throw error
        }
    }
}
