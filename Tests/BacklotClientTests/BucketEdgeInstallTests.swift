import BacklotBasics
import BacklotClient
import BacklotHTTPClient
import BacklotProtocol
import BacklotRepository
import BacklotS3
import BacklotTestSupport
import Foundation
import Testing

/// A repository that publishes to a bucket of a real radosgw, the project's nginx edge
/// (`contrib/nginx/edge.conf`) in front of the bucket, and a client that installs through the edge:
/// no `backlot serve` on the download path at all.
@Suite(.serialized) struct BucketEdgeInstallTests {
    /// Makes `PREFIX/…` of the bucket readable by anyone (GetObject), and the bucket listable, so
    /// that a missing key answers 404 rather than 403 (radosgw 16.2, like AWS) — with `s3cmd
    /// setpolicy`, as docs/s3.md tells operators to.
    static func allowAnonymousReads(
        _ store: ObjectStore, bucket: String, prefix: String, in dir: TemporaryDirectory
    ) throws {
        let host = String(store.endpoint.dropFirst("http://".count))
        _ = try dir.write(
            "s3cfg",
            Array(
                """
                [default]
                access_key = \(store.credentials.accessKeyID)
                secret_key = \(store.credentials.secretAccessKey)
                host_base = \(host)
                host_bucket = \(host)
                use_https = False
                signature_v2 = False

                """.utf8))
        _ = try dir.write(
            "policy.json",
            Array(
                """
                {"Version": "2012-10-17", "Statement": [
                  {"Sid": "tree", "Effect": "Allow", "Principal": "*", "Action": ["s3:GetObject"], "Resource": ["arn:aws:s3:::\(bucket)/\(prefix)/*"]},
                  {"Sid": "missing-is-404", "Effect": "Allow", "Principal": "*", "Action": ["s3:ListBucket"], "Resource": ["arn:aws:s3:::\(bucket)"]}
                ]}
                """.utf8))
        let child = try ChildProcess.start(
            executable: "/usr/bin/s3cmd",
            arguments: ["-c", dir.at("s3cfg"), "setpolicy", dir.at("policy.json"), "s3://\(bucket)"],
            environment: ProcessInfo.processInfo.environment, captureOutput: true)
        try child.release()
        let outcome = child.wait(until: .now + .seconds(60), keepingLast: 1 << 16)
        guard outcome.succeeded else {
            throw BacklotError(
                .io, "s3cmd setpolicy failed: \(String(decoding: outcome.output, as: UTF8.self))", context: bucket)
        }
    }

    @Test func aClientInstallsFromTheBucketThroughTheEdge() async throws {
        let store = try ObjectStore.shared()
        let (s3, bucket) = try store.newBucket("edge")
        let dir = try TemporaryDirectory("bucket-edge")
        defer { dir.remove() }
        let app = "com.example.game"
        let tree = try S3PublishedTree(client: s3, bucket: bucket, prefix: "cdn")
        let repo = try Repository(directory: RepositoryDirectory(path: dir.at("data")), tree: tree)
        try Self.allowAnonymousReads(store, bucket: bucket, prefix: "cdn", in: dir)

        // Publish a pack: to the bucket only.
        let src = TemporaryDirectory.Named(dir.at("src"))
        try SamplePack.writeTree(in: src.asTemporary, seed: 5)
        let path = try SamplePack.build(
            in: src.asTemporary, manifestJSON: SamplePack.manifest(id: "Levels", policy: #"{"onDemand": {}}"#))
        try repo.apps.create(app)
        try repo.apps.createPack(app: app, id: "Levels")
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        let v = try repo.uploads.uploadAndProcess(app: app, pack: "Levels", bytes: bytes)
        try repo.releases.release(app: app, pack: "Levels", version: v.number, channel: .internal)
        #expect(
            !FileSystem.exists(repo.publication.catalogPath(app: app, channel: .internal)),
            "the catalog is in the bucket, not the folder")

        // Anonymous reads straight from the bucket: the tree is readable, a Range of a pack too.
        let anonymous = HTTPClient(stallTimeout: 5)
        let base = store.endpoint + "/\(bucket)/cdn/"
        let sha = try #require(
            try repo.uploads.version(app: app, pack: "Levels", number: v.number).archiveSHA256 as String?)
        #expect(try anonymous.send("GET", base + "v1/apps/\(app)/internal/catalog.json").status == 200)
        let range = try anonymous.send("GET", base + "v1/packs/\(sha).pack", headers: ["Range": "bytes=0-1048575"])
        #expect(range.status == 206 || range.status == 200, "\(range.status) \(range.text)")

        let origin = URL(string: store.endpoint)!
        let edge = try EdgeCache(
            origin: "127.0.0.1:\(origin.port!)", originPath: "/\(bucket)/cdn", workDirectory: dir.at("edge"))
        defer { edge.stop() }
        #expect(edge.waitUntilListening(), "\(edge.errorLogText)")

        // Packs through the edge (sliced, with the bucket's Host: a location that sets a header of its
        // own must set them all), then a client installs from the bucket through the edge.
        do {
            let throughEdge = try anonymous.send(
                "GET", edge.baseURL + "v1/packs/\(sha).pack", headers: ["Range": "bytes=0-99"])
            #expect(
                throughEdge.status == 206,
                "\(throughEdge.status) \(throughEdge.headers) \(throughEdge.text) \(edge.errorLogText)")

            let pinned = try PublicKeyFile.read(path: repo.directory.publicKeyPath)
            let manager = try AssetPackManager(
                configuration: .init(
                    containerPath: dir.at("container"),
                    catalogURL: URL(string: edge.baseURL + "v1/apps/\(app)/internal/catalog.json")!,
                    app: app, channel: .internal, trustedKeys: [pinned], platform: .linux))
            let pack = try await manager.fetch(packWithID: "Levels")
            #expect(pack.version == v.number)
            #expect(try sameFiles(src.path + "/src", manager.url(for: "readme.txt").deletingLastPathComponent().path))
        }

        // What the edge passes on is what the bucket stored: the tree's headers.
        let answer = try HTTPClient(stallTimeout: 5).send("GET", edge.baseURL + "v1/apps/\(app)/internal/catalog.json")
        #expect(answer.status == 200)
        #expect(answer.headers["cache-control"] == "public, max-age=60", "\(answer.headers)")
        #expect(answer.headers["content-type"] == "application/json", "\(answer.headers)")
        // The next key list, asked at every check, is a 404 (cached by the edge), not a 403.
        #expect(try HTTPClient(stallTimeout: 5).send("GET", edge.baseURL + "v1/keys/root-2.json").status == 404)
    }
}
