import BacklotBasics
import BacklotClient
import BacklotCrypto
import BacklotFormat
import BacklotProtocol
import BacklotRepository
import BacklotServer
import Foundation

/// A repository served over HTTP on loopback, packs built from sample trees, and client containers.
public final class ClientFixture: Sendable {
    public let dir: TemporaryDirectory
    public let repository: Repository
    public let server: HostingServer
    public let app = "com.example.game"

    /// - Parameter catalogMaxAge: the catalogs' max-age the server sends (the protocol's 60 s by default).
    public init(catalogMaxAge: Int = PublishedTreeHeaders.standardCatalogMaxAge) throws {
        dir = try TemporaryDirectory("client")
        repository = try Repository(directory: RepositoryDirectory(path: dir.at("data")))
        server = try HostingServer(
            repository: repository, configuration: .init(port: 0),
            treeHeaders: PublishedTreeHeaders(catalogMaxAge: catalogMaxAge))
        try repository.apps.create(app)
    }

    deinit {
        server.stop(grace: 0)
        dir.remove()
    }

    public var pinned: Ed25519.PublicKey { try! PublicKeyFile.read(path: repository.directory.publicKeyPath) }

    public func catalogURL(_ channel: Channel = .internal) -> URL {
        URL(string: server.baseURL + PublishedTreeLayout.catalog(app: app, channel: channel).path)!
    }

    public func manager(
        container: String = "container", channel: Channel = .internal, keys: [Ed25519.PublicKey]? = nil,
        app: String? = nil
    ) throws -> AssetPackManager {
        try AssetPackManager(
            configuration: .init(
                containerPath: dir.at(container), catalogURL: catalogURL(channel), app: app ?? self.app,
                channel: channel, trustedKeys: keys ?? [pinned], platform: .linux))
    }

    /// Writes a source tree for `id` (seeded; `tree` writes its own under `src/` instead),
    /// optionally editing one file, packages it, uploads it, waits for processing and releases it
    /// on `channel`. Returns the source folder and the version.
    @discardableResult
    public func publish(
        id: String = "Levels", seed: UInt64 = 42, edit: Bool = false, policy: String = #"{"onDemand": {}}"#,
        channel: Channel = .internal, chunkSize: Int = 16 << 10, language: String? = nil,
        tree: ((TemporaryDirectory) throws -> Void)? = nil
    ) throws -> (source: String, version: Int) {
        let src = TemporaryDirectory.Named(dir.at("src-\(id)-\(seed)-\(edit)"))
        if let tree { try tree(src.asTemporary) } else { try SamplePack.writeTree(in: src.asTemporary, seed: seed) }
        if edit {
            var level = try src.asTemporary.read("src/Levels/level1.dat")
            level.replaceSubrange(100_000..<100_010, with: Array("EDITEDEDIT".utf8))
            try src.asTemporary.write("src/Levels/level1.dat", level)
        }
        let path = try SamplePack.build(
            in: src.asTemporary, manifestJSON: SamplePack.manifest(id: id, policy: policy, language: language),
            averageChunkSize: chunkSize)
        if (try? repository.apps.packs(app: app).contains(id)) != true {
            try repository.apps.createPack(app: app, id: id)
        }
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        let v = try repository.uploads.uploadAndProcess(app: app, pack: id, bytes: bytes)
        try repository.releases.release(app: app, pack: id, version: v.number, channel: channel)
        if channel != .internal, let request = try repository.releases.requests(app: app).last,
            request.status == "pending"
        {
            try repository.releases.approve(requestID: request.id)
        }
        return (src.path + "/src", v.number)
    }

    /// The published archive of the current release of a pack on a channel.
    public func archivePath(_ id: String = "Levels", channel: Channel = .internal) throws -> String {
        let bytes = Array(
            try Data(contentsOf: URL(fileURLWithPath: repository.publication.catalogPath(app: app, channel: channel))))
        let catalog = try Catalog.verify(
            bytes, trusting: [pinned], app: app, channel: channel, now: Date(), source: "c")
        let release = catalog.packs.first { $0.id.rawValue == id }!.release
        return repository.directory.publicTreePath + "/"
            + PublishedTreeLayout.pack(sha256: release.archiveSHA256.hex).path
    }
}

extension TemporaryDirectory {
    /// A fixed folder used as a TemporaryDirectory (inside another one, removed with it).
    public struct Named {
        public let path: String
        public init(_ path: String) {
            self.path = path
            try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        }
        public var asTemporary: TemporaryDirectory { TemporaryDirectory(existing: path) }
    }
}

/// Compares two folders file by file.
public func sameFiles(_ a: String, _ b: String) throws -> Bool {
    let fm = FileManager.default
    let left = (fm.enumerator(atPath: a)?.allObjects as? [String] ?? []).filter {
        (try? FileSystem.status(a + "/" + $0))??.kind == .regular
    }.sorted()
    let right = (fm.enumerator(atPath: b)?.allObjects as? [String] ?? []).filter {
        (try? FileSystem.status(b + "/" + $0))??.kind == .regular
    }.sorted()
    guard left == right else { return false }
    for p in left
    where try Data(contentsOf: URL(fileURLWithPath: a + "/" + p)) != Data(contentsOf: URL(fileURLWithPath: b + "/" + p))
    { return false }
    return true
}

extension ClientFixture {
    /// What reached this fixture's server on the published tree, from its own metrics: requests it
    /// answered with a body (200, 206), the body bytes it sent, and the 404s it answered (a key list
    /// not published yet, which every check asks for). What an edge in front (``EdgeCache``,
    /// ``VarnishEdge``) did not answer itself.
    public func originLoad() -> (requests: UInt64, bytes: UInt64, notFound: UInt64) {
        var requests: UInt64 = 0
        var bytes: UInt64 = 0
        var notFound: UInt64 = 0
        for line in server.metrics.prometheusText().split(separator: "\n") where !line.hasPrefix("#") {
            let parts = line.split(separator: " ")
            guard parts.count == 2, let n = UInt64(parts[1]) else { continue }
            if parts[0] == "backlot_http_requests_total{route=\"static\",status=\"200\"}"
                || parts[0] == "backlot_http_requests_total{route=\"static\",status=\"206\"}"
            {
                requests += n
            }
            if parts[0] == "backlot_http_requests_total{route=\"static\",status=\"404\"}" { notFound += n }
            if parts[0] == "backlot_http_response_bytes_total" { bytes = n }
        }
        return (requests, bytes, notFound)
    }
}
