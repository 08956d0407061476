import BacklotBasics
import BacklotHTTPServer
import BacklotProtocol
import BacklotRepository
import BacklotS3
import BacklotServer
import BacklotStore
import Dispatch
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// `backlot serve --data DIR [--database URL]`: serves a repository over HTTPS with a local CA by
/// default, its metadata in DIR/meta.sqlite or in PostgreSQL.
struct ServeCommand: Command {
    static let spec = CommandSpec(
        name: "serve",
        summary:
            "Serve a repository's published tree over HTTPS (a local CA is made for you) with Range, ETag and /metrics.",
        discussion: """
            The first start initialises DIR: an Ed25519 signing key (DIR/keys, 0600), its public key at
            DIR/root.pub for clients to pin, and DIR/public, the tree any static host can serve too.
            --tls auto (the default) creates a local CA and a server certificate that Apple devices also
            accept, reuses them on later starts, and prints how to trust the CA. SIGINT or SIGTERM stops
            the server gracefully. One server per data folder: it holds DIR/.lock while it runs, and it
            binds its port before it touches DIR.
            --database postgresql://USER@HOST:PORT/DB keeps the metadata (apps, versions, releases,
            tokens) in PostgreSQL instead of DIR/meta.sqlite; DIR still holds the blobs, uploads and the
            published tree. The password comes from the URI, PGPASSWORD or ~/.pgpass. No admin-token
            file is written then: make the first admin token with `backlot admin init --database URL`.
            The schema is created or upgraded at start; a database that cannot be reached stops the
            start with an error naming host:port/db.
            --storage s3://BUCKET[/PREFIX] --s3-endpoint URL writes the published tree (key lists,
            catalogs, packs, Apple manifests) to PREFIX/v1/ in that bucket, each object with the
            Content-Type and Cache-Control this server sends, for nginx or a CDN in front of the bucket
            to serve (make only PREFIX/v1/ public), and keeps uploads (streamed into multipart
            uploads) and verified archives in PREFIX/uploads/ and PREFIX/blobs/. Credentials come from
            AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN. A missing bucket or wrong
            credentials stop the start with an error naming the endpoint and the bucket.
            Several servers: give each the same --database, --storage and --signing-key (and its own
            DIR). They share the work through leases in the database: an upload begun on one is
            resumed on another, processing is claimed by one server and taken over when its server
            dies (after --lease seconds), publications of a channel take turns, and one server at a
            time re-signs catalogs before they expire. A database records the storage it was first
            used with (the data folder, or the bucket) and refuses a server with other storage.
            """,
        options: RepositoryOptions.options + [
            host, port, tls, tlsCert, tlsKey, hostnames, publicURL, maximumInstallSize, catalogMaxAge,
            threads, connectionsPerAddress, maximumConnections, lease, abandonedUploadsAfter, deltaBases, quiet,
            metricsTokenFile, metricsListen, adoptStorage, maximumHeavyRequests, checkAfter, checkAfterUnderLoad,
        ])

    static let host = Option<String>("host", "ADDRESS", default: "127.0.0.1", help: "Address to listen on.")
    static let port = Option<Int>("port", "N", default: 8443, in: 0...65535, help: "Port (0 picks a free one).")
    static let tls = Option<String?>(
        "tls", "MODE", help: "auto (default), off (behind a TLS-terminating load balancer), or CERT.pem,KEY.pem.")
    static let tlsCert = Option<String?>(
        "tls-cert", "FILE",
        help: "The PEM certificate chain to serve (with --tls-key; the same as --tls CERT.pem,KEY.pem).")
    static let tlsKey = Option<String?>(
        "tls-key", "FILE", help: "The PEM private key of --tls-cert (refused if anyone may read it: chmod 600).")
    static let hostnames = Option<[String]>(
        "hostname", "NAME", help: "Extra names or addresses for the auto certificate (comma-separated).")
    static let publicURL = Option<String?>(
        "public-url", "URL",
        help: "Where clients reach the tree, for Apple download manifests (default: this server's URL).")
    static let maximumInstallSize = Option<UInt64>(
        "max-install-size", "BYTES", default: Repository.defaultMaximumInstallSize, showDefault: "68719476736, 64 GiB",
        help: "Refuse packs whose files add up to more.",
        expected: "a whole number from 1 to \(Int64.max)", check: { (1...UInt64(Int64.max)).contains($0) })
    static let catalogMaxAge = Option<Int>(
        "catalog-max-age", "SECONDS", default: PublishedTreeHeaders.standardCatalogMaxAge, in: 0...86_400,
        help: "How long clients and caches may keep a catalog (Cache-Control max-age).")
    static let threads = Option<Int?>(
        "threads", "N", in: 0...1024,
        help: "Event-loop threads for plain HTTP (default two per core, at least 2; 0: one thread per connection).")
    static let connectionsPerAddress = Option<Int?>(
        "connections-per-address", "N", in: 0...1_000_000,
        help: "Most connections from one client address (default 64; 0: no limit, e.g. behind a load balancer).")
    static let maximumConnections = Option<Int?>(
        "max-connections", "N", in: 1...1_000_000,
        help: "Most connections in all (default 16384, less if the descriptor limit is lower).")
    static let lease = Option<Int>(
        "lease", "SECONDS", default: Int(Repository.defaultLeaseDuration), in: 1...3600,
        help:
            "How long a server's claim on an upload, a processing or the re-signing lasts unrenewed: how soon another server takes over from one that died."
    )
    static let maximumHeavyRequests = Option<Int>(
        "max-heavy-requests", "N", default: LoadShedding().heavyRequests, in: 0...1_000_000,
        help:
            "Most archive and delta transfers and API calls answered at once; more get 503 with Retry-After at once (0: no bound; docs/scaling.md)."
    )
    static let checkAfter = Option<Int?>(
        "check-after", "SECONDS", in: 0...PublishedTreeLayout.longestCheckAfter,
        help: "Send Backlot-Check-After: SECONDS with catalogs: devices check no more often (default: no hint).")
    static let checkAfterUnderLoad = Option<Int>(
        "check-after-under-load", "SECONDS", default: LoadShedding().checkAfterUnderLoad,
        in: 0...PublishedTreeLayout.longestCheckAfter,
        help: "The Backlot-Check-After sent while requests are being shed, and for a minute after.")
    static let quiet = Flag("quiet", help: "No access log.")
    static let adoptStorage = Flag(
        "adopt-storage",
        help:
            "Record this server's storage (DIR, or --storage) in the database, replacing the one it records (after moving or copying the storage)."
    )
    static let metricsTokenFile = Option<String?>(
        "metrics-token-file", "FILE",
        help:
            "Require this file's token on /metrics (Authorization: Bearer TOKEN); the file must not be world-readable.")
    static let metricsListen = Option<String?>(
        "metrics-listen", "HOST:PORT",
        help: "Serve /metrics on this address only (plain HTTP), not on the main port.")
    static let abandonedUploadsAfter = Option<Int>(
        "abandoned-uploads-after", "SECONDS", default: Int(Repository.defaultAbandonedUploadsAfter),
        showDefault: "604800, 7 days", in: 1...(10 * 366 * 86_400),
        help:
            "Remove versions still awaiting their upload when it has seen no bytes for this long, with what was uploaded."
    )

    static let deltaBases = Option<Int>(
        "delta-bases", "N", default: Publication.defaultDeltaBases, in: 0...16,
        help:
            "How many earlier versions of a pack get a delta into each version processed (0: none; docs/format.md §14)."
    )

    /// `--tls`, or `--tls-cert FILE --tls-key FILE` (both, and not with `--tls`), as one mode. A
    /// key file anyone may read or write is refused, whichever way it is given: it is the server's
    /// identity (group-readable is allowed, as Debian's `ssl-cert` group uses it).
    static func tlsMode(_ arguments: ParsedArguments) throws -> String {
        let cert = arguments[tlsCert]
        let key = arguments[tlsKey]
        var mode = arguments[tls] ?? "auto"
        if cert != nil || key != nil {
            guard let cert, let key else {
                throw BacklotError(
                    .usage, "--tls-cert and --tls-key go together", context: "backlot serve",
                    hint: "give both: --tls-cert CERT.pem --tls-key KEY.pem")
            }
            guard arguments[tls] == nil else {
                throw BacklotError(
                    .usage, "--tls and --tls-cert/--tls-key both say where TLS comes from", context: "backlot serve",
                    hint: "keep one of them")
            }
            mode = cert + "," + key
        }
        let parts = mode.split(separator: ",").map(String.init)
        if parts.count == 2 {
            var st = stat()
            if stat(parts[1], &st) == 0, st.st_mode & 0o006 != 0 {
                throw BacklotError(
                    .invalidInput, "the TLS key is open to everyone (mode \(String(st.st_mode & 0o777, radix: 8)))",
                    context: parts[1],
                    hint: "chmod 600 \(parts[1]) (or 640 with a group such as ssl-cert)")
            }
        }
        return mode
    }

    /// The token of `--metrics-token-file`: one line, not empty, in a file not everyone may read.
    static func readMetricsToken(_ path: String) throws -> String {
        var st = stat()
        if stat(path, &st) == 0, st.st_mode & 0o004 != 0 {
            throw BacklotError(
                .invalidInput,
                "the metrics token file is readable by everyone (mode \(String(st.st_mode & 0o777, radix: 8)))",
                context: path, hint: "chmod 600 \(path)")
        }
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw BacklotError(.invalidInput, "cannot read the metrics token file", context: path)
        }
        let token = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !token.isEmpty, !token.contains(where: { $0.isWhitespace || $0.isNewline }) else {
            throw BacklotError(
                .invalidInput, "the metrics token file must hold one token: a line without spaces", context: path)
        }
        return token
    }

    /// `HOST:PORT` or `[IPv6]:PORT`.
    static func hostAndPort(_ text: String) throws -> (host: String, port: UInt16) {
        let bad = BacklotError(
            .usage, "--metrics-listen takes HOST:PORT (got '\(text)')", context: "backlot serve",
            hint: "for example 127.0.0.1:9464 or [::1]:9464")
        guard let colon = text.lastIndex(of: ":") else { throw bad }
        var host = String(text[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty, let port = CheckedInteger.parse(text[text.index(after: colon)...], as: UInt16.self) else {
            throw bad
        }
        return (host, port)
    }

    static func run(_ arguments: ParsedArguments, io: any CommandIO) throws {
        let mode = try tlsMode(arguments)
        guard mode == "off" || mode == "auto" || mode.split(separator: ",").count == 2 else {
            throw BacklotError(
                .usage, "--tls takes auto, off, or CERT.pem,KEY.pem (got '\(mode)')", context: "backlot serve")
        }
        // Bad values are usage errors before anything starts.
        let metricsToken = try arguments[metricsTokenFile].map(Self.readMetricsToken)
        let storage = try RepositoryOptions.storage(arguments, command: spec.name)
        let treeHeaders = PublishedTreeHeaders(catalogMaxAge: arguments[Self.catalogMaxAge])
        var launch = HostingService.Launch(dataFolder: arguments[RepositoryOptions.data])
        launch.signingKeyFile = arguments[RepositoryOptions.signingKey]
        launch.host = arguments[Self.host]
        launch.port = UInt16(arguments[Self.port])
        launch.metricsAddress = try arguments[metricsListen].map(Self.hostAndPort)
        launch.metricsToken = metricsToken
        switch mode {
        case "off": launch.tls = .off
        case "auto": launch.tls = .localCA(hostnames: arguments[Self.hostnames])
        default:
            let parts = mode.split(separator: ",").map(String.init)
            launch.tls = .files(certificate: parts[0], key: parts[1])
        }
        if let storage {
            launch.openBucket = {
                let bucket = try RepositoryOptions.connect(storage, headers: treeHeaders)
                return (bucket.tree, bucket.archives)
            }
        }
        if let url = arguments[RepositoryOptions.database] {
            launch.openDatabase = { try AdminInitCommand.openDatabase(url) }
        }
        let (threads, perAddress, limit) =
            (arguments[threads], arguments[connectionsPerAddress], arguments[maximumConnections])
        let (maximumInstallSize, lease, adopt, bases, publicURL) = (
            arguments[Self.maximumInstallSize], arguments[Self.lease], arguments[adoptStorage], arguments[deltaBases],
            arguments[publicURL]
        )
        let loadShedding = LoadShedding(
            heavyRequests: arguments[maximumHeavyRequests], checkAfter: arguments[checkAfter],
            checkAfterUnderLoad: arguments[checkAfterUnderLoad])
        let abandonedAfter = TimeInterval(arguments[abandonedUploadsAfter])
        let quiet = arguments[Self.quiet]
        launch.configure = { service in
            service.http.threads = threads ?? service.http.threads
            service.http.connectionsPerAddress = perAddress ?? service.http.connectionsPerAddress
            service.http.connectionLimit = limit ?? service.http.connectionLimit
            service.maximumInstallSize = maximumInstallSize
            service.leaseSeconds = Double(lease)
            service.adoptStorage = adopt
            service.deltaBases = bases
            service.publicURL = publicURL
            service.treeHeaders = treeHeaders
            service.loadShedding = loadShedding
            service.abandonedUploadsAfter = abandonedAfter
            service.version = BacklotCLI.version
            if !quiet { service.accessLog = { @Sendable line in io.err(line + "\n") } }
        }
        let launched = try HostingService.launch(launch) { line in io.err(line + "\n") }
        do {
            try announce(launched, metricsToken: metricsToken, io: io)
        } catch {
            launched.stop(grace: 0)
            throw error
        }
    }

    /// Says where the server is and how to reach it, waits for SIGINT or SIGTERM, then stops it.
    private static func announce(_ launched: HostingService.Launched, metricsToken: String?, io: any CommandIO) throws {
        let running = launched.service
        let (directory, tree, database) = (launched.directory, launched.tree, launched.database)
        if let warning = launched.localTLS?.caWarning { io.err("warning: \(warning)\n") }
        let trustNote = launched.localTLS.map { local in
            """
            TLS: local CA \(local.caCertificatePath)
                 SHA-256 fingerprint \(local.caFingerprint)
                 trust it: curl --cacert \(local.caCertificatePath) …; on Debian: sudo cp \(local.caCertificatePath) /usr/local/share/ca-certificates/backlot-local-ca.crt && sudo update-ca-certificates; on Apple devices: install it as a profile, then enable full trust in Settings › General › About › Certificate Trust Settings
            """
        }
        let probeCA = launched.trustedCA
        let (repository, server) = (running.repository, running.server)
        // SIGINT and SIGTERM stop gracefully from before the address is announced: a client that
        // reads it and signals at once must not meet the default exit (143).
        let done = DispatchSemaphore(value: 0)
        BacklotCLI.onInterrupt { _ in done.signal() }
        io.out("Serving \(directory.publicTreePath) at \(server.baseURL)\n")
        io.out("Signing key: pin \(directory.publicKeyPath)\n")
        if let tree {
            io.out("Published tree: \(tree.location) (this server's /v1 serves only DIR/public's key lists then)\n")
        }
        if let database {
            io.out("Metadata: \(database.displayName)\n")
            let how =
                try repository.tokens.hasAdmin()
                ? "the token backlot admin init printed" : "no admin token yet: run backlot admin init --database URL"
            io.out("Management API: \(server.baseURL)api (\(how))\n")
        } else {
            io.out("Management API: \(server.baseURL)api (admin token in \(repository.adminTokenPath))\n")
        }
        if let trustNote { io.out(trustNote + "\n") }
        if let note = server.limitNote { io.err("warning: \(note)\n") }
        io.out(
            "Metrics: \(server.metricsURL ?? server.baseURL + "metrics")\(metricsToken == nil ? "" : " (with its token)"). Stop with Ctrl-C.\n"
        )
        // Under a Type=notify unit: ready now, and a watchdog fed while the server answers itself.
        let notifier = ServeNotifier(environment: io.environment, baseURL: server.baseURL, caFile: probeCA) { line in
            io.err(line + "\n")
        }
        notifier?.ready(status: "serving \(server.baseURL)")

        done.wait()
        notifier?.stopping()
        io.out("Stopping: letting requests in flight finish…\n")
        launched.stop(grace: 5)
        io.out("Stopped.\n")
    }
}
