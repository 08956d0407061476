import BacklotBasics
import BacklotCommands
import BacklotCrypto
import BacklotHTTPClient
import BacklotJSON
import BacklotProtocol
import BacklotRepository
import BacklotS3
import BacklotTestSupport
import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Two `backlot serve` processes on one PostgreSQL database and one radosgw bucket, with one
/// signing key: uploads and releases through both at once, an upload begun on one finished on the
/// other, a release request decided through both at once, and kill -9 of a server in the middle
/// of processing and in the middle of a publication, the other finishing the work.
@Suite(.serialized, .requires(.postgres)) struct ClusterTests {
    typealias Server = ServerProcessTests.Server

    /// The shared engines and what every server of the cluster is started with.
    struct Cluster {
        let dir: TemporaryDirectory
        let database: String
        let s3: S3Client
        let bucket: String
        let token: String
        let key: Ed25519.PublicKey
        let environment: [String: String]
        let arguments: [String]

        init(_ label: String, objects: ObjectStore? = nil) throws {
            dir = try TemporaryDirectory(label)
            database = try PostgresCluster.shared().createDatabase(label)
            let objects = try objects ?? ObjectStore.shared()
            (s3, bucket) = try objects.newBucket(label)
            // One signing key for every server, made by a first data folder and kept apart (0600).
            let seed = try RepositoryDirectory(path: dir.at("seed"))
            let keyFile = try dir.write("signing.key", try dir.read("seed/keys/signing.key"), mode: 0o600)
            key = try PublicKeyFile.read(path: seed.publicKeyPath)
            let io = CapturedIO()
            guard BacklotCLI.main(["admin", "init", "--database", database], io: io) == 0 else {
                throw BacklotError(.io, "admin init failed: \(io.standardError)")
            }
            token = io.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)
            environment = [
                "AWS_ACCESS_KEY_ID": objects.credentials.accessKeyID,
                "AWS_SECRET_ACCESS_KEY": objects.credentials.secretAccessKey,
                "AWS_SESSION_TOKEN": "", "BACKLOT_TEST_STOP_AT": "",
            ]
            arguments = [
                "--tls", "off", "--database", database, "--storage", "s3://\(bucket)/c", "--s3-endpoint",
                objects.endpoint,
                "--s3-path-style", "--signing-key", keyFile, "--lease", "2",
            ]
        }

        /// Starts a server with its own data folder `name`.
        func start(_ name: String, stopAt: String? = nil) throws -> Server {
            var env = environment
            if let stopAt { env["BACKLOT_TEST_STOP_AT"] = stopAt }
            return try Server(data: dir.at(name), arguments: arguments, environment: env)
        }

        func api(_ server: Server, _ method: String, _ path: String, json: String? = nil) throws -> HTTPClient.Response
        {
            var headers = ["Authorization": "Bearer \(token)"]
            if json != nil { headers["Content-Type"] = "application/json" }
            return try HTTPClient(stallTimeout: 20).send(
                method, server.baseURL + path.dropFirst(), headers: headers, body: json.map { .bytes(Array($0.utf8)) })
        }

        func put(
            _ server: Server, pack: String, version: Int, file: String, from offset: UInt64, length: UInt64
        ) throws -> HTTPClient.Response {
            try HTTPClient(stallTimeout: 20).send(
                "PUT", server.baseURL + "api/apps/a/packs/\(pack)/versions/\(version)/archive",
                headers: ["Authorization": "Bearer \(token)", "Upload-Offset": String(offset)],
                body: .file(path: file, offset: offset, length: length))
        }

        func json(_ r: HTTPClient.Response) throws -> JSONNode { try JSONReader(source: "answer").read(r.body).root }

        /// The bytes of an upload the server reports stored.
        func received(_ server: Server, pack: String, version: Int) throws -> UInt64 {
            let node = try json(api(server, "GET", "/api/apps/a/packs/\(pack)/versions/\(version)"))
            guard case .number(let n)? = node["received"]?.kind, let value = UInt64(n) else {
                throw BacklotError(.io, "no received in \(node.serialized())")
            }
            return value
        }

        /// Waits until the version is processed (or failed), asking `server`, and returns its state;
        /// throws when that takes longer than 60 s.
        func state(_ server: Server, pack: String, version: Int) throws -> String {
            var state = ""
            return try Wait.value(
                "\(pack) version \(version) is COMPLETE or FAILED on \(server.baseURL)", timeout: .seconds(60),
                poll: .milliseconds(50), detail: { "state \(state)" }
            ) {
                state =
                    try json(api(server, "GET", "/api/apps/a/packs/\(pack)/versions/\(version)"))["state"]?.stringValue
                    ?? ""
                return state == "COMPLETE" || state == "FAILED" ? state : nil
            }
        }

        /// The catalog in the bucket, verified with the cluster's key.
        func catalog(newerThan: UInt64? = nil) throws -> Catalog {
            let bytes = try s3.getObject(bucket: bucket, key: "c/v1/apps/a/internal/catalog.json").bytes
            return try Catalog.verify(
                bytes, trusting: [key], app: "a", channel: .internal, now: Date(), newerThan: newerThan,
                source: "the bucket's catalog")
        }

        /// A pack of about `size` bytes of random content, as a file.
        func archive(_ pack: String, seed: UInt64, size: Int) throws -> String {
            let src = try TemporaryDirectory("src")
            defer { src.remove() }
            var g = SeededGenerator(seed: seed)
            try src.write("src/data.bin", g.bytes(size))
            let path = try SamplePack.build(
                in: src, manifestJSON: SamplePack.manifest(id: pack), averageChunkSize: 256 << 10)
            let kept = dir.at("\(pack)-\(seed).pack")
            try FileManager.default.copyItem(atPath: path, toPath: kept)
            return kept
        }

        func size(_ file: String) throws -> UInt64 { try FileDescriptor.openForReading(file).size() }
    }

    @Test
    func twoServersShareUploadsReleasesAndRequestsThroughOneDatabaseAndBucket() throws {
        let c = try Cluster("cluster-share")
        defer { c.dir.remove() }
        let a = try c.start("a")
        defer { _ = a.terminate() }
        let b = try c.start("b")
        defer { _ = b.terminate() }
        #expect(try c.api(a, "POST", "/api/apps", json: #"{"id":"a"}"#).status == 201)
        #expect(try c.api(b, "POST", "/api/apps", json: #"{"id":"a"}"#).status == 409, "the app exists for both")
        for pack in ["Levels", "Maps"] {
            #expect(try c.api(b, "POST", "/api/apps/a/packs", json: "{\"id\":\"\(pack)\"}").status == 201)
        }

        // Uploads through both at once, each processed by one of them.
        let levels = try c.archive("Levels", seed: 1, size: 300_000)
        let maps = try c.archive("Maps", seed: 2, size: 300_000)
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 2) { i in
            let (server, pack, file) = i == 0 ? (a, "Levels", levels) : (b, "Maps", maps)
            do {
                _ = try c.api(
                    server, "POST", "/api/apps/a/packs/\(pack)/versions", json: "{\"size\":\(try c.size(file))}")
                let r = try c.put(server, pack: pack, version: 1, file: file, from: 0, length: try c.size(file))
                if r.status != 202 { failures.withLock { $0.append("\(pack): \(r.status) \(r.text)") } }
            } catch {
                failures.withLock { $0.append("\(pack): \(error)") }
            }
        }
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0 })")
        #expect(try c.state(b, pack: "Levels", version: 1) == "COMPLETE")
        #expect(try c.state(a, pack: "Maps", version: 1) == "COMPLETE")

        // Releases through both at once: the catalog names both packs, and verifies.
        DispatchQueue.concurrentPerform(iterations: 2) { i in
            let (server, pack) = i == 0 ? (a, "Levels") : (b, "Maps")
            let r = try? c.api(
                server, "POST", "/api/apps/a/releases",
                json: "{\"pack\":\"\(pack)\",\"version\":1,\"channel\":\"internal\"}")
            if r?.status != 200 {
                failures.withLock { $0.append("release \(pack): \(r?.status ?? 0) \(r?.text ?? "")") }
            }
        }
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0 })")
        let first = try c.catalog()
        #expect(first.packs.map(\.id.rawValue) == ["Levels", "Maps"])

        // An upload begun on A (the first 6 MB, less than a part: kept as a tail object in the bucket)
        // is finished on B, which starts from that tail and sends the parts.
        let big = try c.archive("Levels", seed: 3, size: 9 << 20)
        let size = try c.size(big)
        _ = try c.api(a, "POST", "/api/apps/a/packs/Levels/versions", json: "{\"size\":\(size)}")
        let half = try c.put(a, pack: "Levels", version: 2, file: big, from: 0, length: 6_000_000)
        #expect(half.status == 200, "\(half.text)")
        let at = try c.received(b, pack: "Levels", version: 2)
        #expect(at == 6_000_000, "B sees what A stored")
        let rest = try c.put(b, pack: "Levels", version: 2, file: big, from: at, length: size - at)
        #expect(rest.status == 202, "\(rest.text)")
        #expect(try c.state(a, pack: "Levels", version: 2) == "COMPLETE")
        let sha = try SHA256.hash(fileAt: big).hex
        #expect(try c.json(c.api(a, "GET", "/api/apps/a/packs/Levels/versions/2"))["archiveSHA256"]?.stringValue == sha)

        // A production release request approved through both at once is approved once; the other gets 409.
        let requested = try c.api(
            a, "POST", "/api/apps/a/releases", json: #"{"pack":"Levels","version":2,"channel":"production"}"#)
        #expect(requested.status == 202, "\(requested.text)")
        let id = try #require(try c.json(requested)["request"]?["id"]?.serialized())
        let statuses = Mutex<[Int]>([])
        DispatchQueue.concurrentPerform(iterations: 2) { i in
            let status = (try? c.api(i == 0 ? a : b, "POST", "/api/apps/a/releases/\(id)/approve").status) ?? 0
            statuses.withLock { $0.append(status) }
        }
        #expect(statuses.withLock { $0 }.sorted() == [200, 409])

        // Nothing of the content lives on either server's disk: uploads and archives are in the bucket.
        for folder in ["a/uploads", "a/blobs", "b/uploads", "b/blobs"] {
            #expect(!FileSystem.exists(c.dir.at(folder)), "\(folder)")
        }
        #expect(try c.s3.headObject(bucket: c.bucket, key: "c/blobs/\(sha).pack") != nil)
        #expect(try c.s3.listAllObjects(bucket: c.bucket, prefix: "c/uploads/").isEmpty)
        #expect(a.terminate() == 0, "\(a.ending)")
        #expect(b.terminate() == 0, "\(b.ending)")
    }

    @Test
    func theBucketOutOfReachIsA503WithRetryAfterAndTheServerGoesOnWhenItIsBack() throws {
        try ObjectStore.withPrivateGateway { objects in
            let c = try Cluster("cluster-gateway", objects: objects)
            defer { c.dir.remove() }
            let a = try c.start("a")
            defer { _ = a.terminate() }
            _ = try c.api(a, "POST", "/api/apps", json: #"{"id":"a"}"#)
            _ = try c.api(a, "POST", "/api/apps/a/packs", json: #"{"id":"Levels"}"#)
            let file = try c.archive("Levels", seed: 9, size: 200_000)
            let size = try c.size(file)
            _ = try c.api(a, "POST", "/api/apps/a/packs/Levels/versions", json: "{\"size\":\(size)}")
            try objects.stopGateway()
            var restarted = false
            defer { if !restarted { try? objects.startGateway() } }
            let refused = try c.put(a, pack: "Levels", version: 1, file: file, from: 0, length: size)
            #expect(refused.status == 503, "\(refused.status) \(refused.text)")
            #expect(refused.headers["retry-after"] != nil, "\(refused.headers)")
            // What needs only the database still answers.
            #expect(try c.api(a, "GET", "/api/apps/a/packs/Levels/versions").status == 200)
            try objects.startGateway()
            restarted = true
            let at = try c.received(a, pack: "Levels", version: 1)
            let accepted = try c.put(a, pack: "Levels", version: 1, file: file, from: at, length: size - at)
            #expect(accepted.status == 202, "\(accepted.text)")
            #expect(try c.state(a, pack: "Levels", version: 1) == "COMPLETE")
        }
    }

    @Test
    func aServerKilledMidProcessingOrMidPublicationLeavesTheWorkToTheOther() throws {
        let c = try Cluster("cluster-kill")
        defer { c.dir.remove() }
        // A dies once it has verified an upload, before it stores it.
        var a = try c.start("a", stopAt: "processing.beforeStore:KILL")
        _ = try c.api(a, "POST", "/api/apps", json: #"{"id":"a"}"#)
        _ = try c.api(a, "POST", "/api/apps/a/packs", json: #"{"id":"Levels"}"#)
        let file = try c.archive("Levels", seed: 7, size: 200_000)
        _ = try c.api(a, "POST", "/api/apps/a/packs/Levels/versions", json: "{\"size\":\(try c.size(file))}")
        // Accepted (202) and processed after the answer, or cut by the kill before the answer left.
        do {
            let put = try c.put(a, pack: "Levels", version: 1, file: file, from: 0, length: try c.size(file))
            #expect(put.status == 202, "\(put.status) \(put.text)")
        } catch let e as BacklotError {
            // `HTTPClient.send` reports a connection cut before the answer as `.io` (the streaming
            // calls say `.transport`); this branch runs when the kill beats the answer out.
            #expect(e.code == .io, "\(e)")
        }
        try a.waitForEnd("killed at processing.beforeStore")
        #expect(a.killedBySIGKILL, "\(a.ending)")
        #expect(a.standardError.contains("stop point processing.beforeStore reached"), "\(a.ending)")
        // B, started afterwards, takes the processing over once A's lease has run out.
        let b = try c.start("b")
        defer { _ = b.terminate() }
        #expect(try c.state(b, pack: "Levels", version: 1) == "COMPLETE")

        // A again, now dying after it wrote a catalog and before its transaction committed.
        a = try c.start("a", stopAt: "publish.afterCatalog:KILL")
        #expect(throws: BacklotError.self, "the release the server dies in gets no answer") {
            _ = try c.api(
                a, "POST", "/api/apps/a/releases", json: #"{"pack":"Levels","version":1,"channel":"internal"}"#)
        }
        try a.waitForEnd("killed at publish.afterCatalog")
        #expect(a.killedBySIGKILL, "\(a.ending)")
        #expect(a.standardError.contains("stop point publish.afterCatalog reached"), "\(a.ending)")
        let written = try c.catalog()
        #expect(written.packs.map(\.release.version) == [1], "the catalog A wrote before dying verifies")
        // B's next publication is above it: the version only grows, whichever server wrote last.
        #expect(
            try c.api(b, "POST", "/api/apps/a/releases", json: #"{"pack":"Levels","version":1,"channel":"internal"}"#)
                .status == 200)
        let after = try c.catalog(newerThan: written.version)
        #expect(after.version > written.version && after.packs.map(\.release.version) == [1])
    }
}
