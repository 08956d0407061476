import BacklotBasics
import BacklotCrypto
import BacklotFormat
import BacklotJSON
import BacklotProtocol
import BacklotS3
import BacklotTestSupport
import Foundation
import Testing

@testable import BacklotRepository

/// The published tree written to a bucket of a real radosgw (`ObjectStore.shared()`): the same
/// files as the folder, each object with the Content-Type and Cache-Control of PublishedTreeHeaders.
@Suite(.serialized) struct S3PublishedTreeTests {
    /// Writes every change to both trees, so that what the bucket holds can be compared with what
    /// the folder holds for the very same publications (same signatures, same catalog versions).
    struct BothTrees: PublishedTreeStore {
        let folder: LocalPublishedTree
        let bucket: S3PublishedTree
        var location: String { folder.location + " and " + bucket.location }
        func write(_ bytes: [UInt8], at relative: String) throws {
            try folder.write(bytes, at: relative)
            try bucket.write(bytes, at: relative)
        }
        func copyFile(from source: String, to relative: String, replacing: Bool) throws {
            try folder.copyFile(from: source, to: relative, replacing: replacing)
            try bucket.copyFile(from: source, to: relative, replacing: replacing)
        }
        func read(_ relative: String, atMost limit: UInt64) throws -> [UInt8]? {
            let bytes = try folder.read(relative, atMost: limit)
            guard try bucket.read(relative, atMost: limit) == bytes else {
                throw BacklotError(.io, "the trees differ at \(relative)")
            }
            return bytes
        }
        func remove(_ relative: String) throws {
            try folder.remove(relative)
            try bucket.remove(relative)
        }
        func fileNames(in relative: String) throws -> [String] {
            let names = try folder.fileNames(in: relative)
            let inBucket = try bucket.fileNames(in: relative)
            guard names == inBucket else {
                throw BacklotError(.io, "the trees differ in \(relative): \(names) vs \(inBucket)")
            }
            return names
        }
        func exists(_ relative: String) throws -> Bool { try folder.exists(relative) && bucket.exists(relative) }
        func makeFolder(_ relative: String) throws { try folder.makeFolder(relative) }
    }

    static let app = "com.example.game"

    /// Uploads the sample pack (seed) as a new version of Levels and waits for its processing.
    static func upload(_ repo: Repository, seed: UInt64) throws -> VersionInfo {
        let src = try TemporaryDirectory("src")
        defer { src.remove() }
        try SamplePack.writeTree(in: src, seed: seed)
        let path = try SamplePack.build(in: src, manifestJSON: SamplePack.manifest(id: "Levels"))
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        return try repo.uploads.uploadAndProcess(app: app, pack: "Levels", bytes: bytes)
    }

    /// Every file of the local tree, relative (`v1/…`), sorted.
    static func localFiles(_ root: String) throws -> [String] {
        var out: [String] = []
        var folders = [""]
        while let folder = folders.popLast() {
            for raw in try FileSystem.entryNames(root + (folder.isEmpty ? "" : "/" + folder)) {
                let name = String(decoding: raw, as: UTF8.self)
                let relative = folder.isEmpty ? name : folder + "/" + name
                switch try FileSystem.linkStatus(root + "/" + relative)?.kind {
                case .directory?: folders.append(relative)
                case .regular?: out.append(relative)
                default: break
                }
            }
        }
        return out.sorted()
    }

    @Test func theBucketHoldsTheFolderTreeFileByFileWithItsHeaders() throws {
        let store = try ObjectStore.shared()
        let (s3, bucket) = try store.newBucket("tree")
        let dir = try TemporaryDirectory("s3tree")
        defer { dir.remove() }
        let directory = try RepositoryDirectory(path: dir.at("data"))
        let headers = PublishedTreeHeaders(catalogMaxAge: 45, keyListMaxAge: 200)
        let remote = try S3PublishedTree(client: s3, bucket: bucket, prefix: "/cdn/public/", headers: headers)
        #expect(remote.prefix == "cdn/public")
        let repo = try Repository(
            directory: directory, tree: BothTrees(folder: LocalPublishedTree(directory: directory), bucket: remote))
        try repo.apps.create(Self.app)
        try repo.apps.createPack(app: Self.app, id: "Levels")
        let v1 = try Self.upload(repo, seed: 7)
        let v2 = try Self.upload(repo, seed: 8)
        #expect(v1.state == .complete && v2.state == .complete, "\(v1) \(v2)")
        try repo.releases.release(app: Self.app, pack: "Levels", version: 1, channel: .internal)
        try repo.releases.release(app: Self.app, pack: "Levels", version: 2, channel: .internal)
        // An .aar for iOS: Apple's download manifests (one per Apple platform) and the archive under its pack ID.
        repo.publication.setPublicURL("https://cdn.example.com/")
        try repo.apps.createPack(app: Self.app, id: "Intro")
        let aar = AppleArchiveBuilder.archive(files: [("intro.txt", Array("hello from the bucket".utf8))])
        let manifest = try JSONReader(source: "manifest", allowsComments: false, allowsTrailingCommas: false)
            .read(Array(SamplePack.manifest(id: "Intro", platforms: #"["iOS"]"#).utf8)).root
        let apple = try repo.uploads.createVersion(
            app: Self.app, pack: "Intro", size: UInt64(aar.count), format: .appleArchive, manifest: manifest)
        let upload = try repo.uploads.beginUpload(app: Self.app, pack: "Intro", number: apple.number, offset: 0)
        try aar.withUnsafeBytes { try upload.append($0) }
        try upload.close()
        repo.uploads.waitForProcessing()
        #expect(try repo.uploads.version(app: Self.app, pack: "Intro", number: apple.number).state == .complete)
        try repo.releases.release(app: Self.app, pack: "Intro", version: apple.number, channel: .internal)
        try repo.publication.rotateKey()

        let files = try Self.localFiles(directory.publicTreePath)
        #expect(
            files.contains("v1/keys/root-1.json") && files.contains("v1/keys/root-2.json")
                && files.contains("v1/keys/root.json"))
        #expect(files.contains("v1/apps/\(Self.app)/internal/catalog.json"))
        #expect(files.contains("v1/packs/\(v2.archiveSHA256!).pack"))
        #expect(
            files.contains("v1/apple/\(Self.app)/internal/ios/packs/Intro")
                && files.contains("v1/apple/\(Self.app)/internal/macos/manifest.json"))
        let objects = try s3.listAllObjects(bucket: bucket)
        #expect(
            objects.map(\.key).sorted() == files.map { "cdn/public/" + $0 },
            "the bucket has exactly the folder's files, under the prefix")
        for relative in files {
            let local = try FileDescriptor.readWholeFile(
                directory.publicTreePath + "/" + relative, atMost: 64 << 20, what: "a tree file")
            let (bytes, info) = try s3.getObject(bucket: bucket, key: "cdn/public/" + relative)
            #expect(bytes == local, "\(relative): the same bytes")
            let head = try #require(try s3.headObject(bucket: bucket, key: "cdn/public/" + relative))
            #expect(
                head.contentType == PublishedTreeHeaders.contentType(relative),
                "\(relative): \(head.contentType ?? "no Content-Type")")
            #expect(
                head.cacheControl == headers.cacheControl(relative),
                "\(relative): \(head.cacheControl ?? "no Cache-Control")")
            #expect(info.size == UInt64(local.count))
        }
        // The rule, spelled out for the three kinds of file.
        #expect(
            try s3.headObject(bucket: bucket, key: "cdn/public/v1/apps/\(Self.app)/internal/catalog.json")?.cacheControl
                == "public, max-age=45")
        #expect(
            try s3.headObject(bucket: bucket, key: "cdn/public/v1/keys/root.json")?.cacheControl
                == "public, max-age=200")
        #expect(
            try s3.headObject(bucket: bucket, key: "cdn/public/v1/packs/\(v1.archiveSHA256!).pack")?.cacheControl
                == "public, max-age=31536000, immutable")
        #expect(
            try s3.headObject(bucket: bucket, key: "cdn/public/v1/packs/\(v1.archiveSHA256!).pack")?.contentType
                == "application/octet-stream")
        let aarHead = try s3.headObject(bucket: bucket, key: "cdn/public/v1/apple/\(Self.app)/internal/ios/packs/Intro")
        #expect(aarHead?.cacheControl == "no-cache" && aarHead?.contentType == "application/octet-stream")
        #expect(
            try s3.headObject(bucket: bucket, key: "cdn/public/v1/apple/\(Self.app)/internal/ios/manifest.json")?
                .cacheControl == "public, max-age=45")

        // A withdrawn .aar leaves both trees alike (its archive removed from the platform's packs).
        try repo.releases.withdraw(app: Self.app, pack: "Intro", channel: .internal)
        #expect(
            try s3.headObject(bucket: bucket, key: "cdn/public/v1/apple/\(Self.app)/internal/ios/packs/Intro") == nil)
        #expect(
            try s3.listAllObjects(bucket: bucket).map(\.key).sorted()
                == Self.localFiles(directory.publicTreePath).map { "cdn/public/" + $0 })
    }

    @Test func aRepositoryPublishesToTheBucketAloneAndCollectsItsGarbage() throws {
        let store = try ObjectStore.shared()
        let (s3, bucket) = try store.newBucket("repo")
        let dir = try TemporaryDirectory("s3repo")
        defer { dir.remove() }
        let directory = try RepositoryDirectory(path: dir.at("data"))
        let tree = try S3PublishedTree(client: s3, bucket: bucket)
        let repo = try Repository(directory: directory, tree: tree)
        // The first key list, which the folder made, is in the bucket from the start.
        #expect(try tree.fileNames(in: "v1/keys") == ["root-1.json", "root.json"])
        try repo.apps.create(Self.app)
        try repo.apps.createPack(app: Self.app, id: "Levels")
        let v1 = try Self.upload(repo, seed: 11)
        try repo.releases.release(app: Self.app, pack: "Levels", version: 1, channel: .production)
        if let request = try repo.releases.requests(app: Self.app).last, request.status == "pending" {
            try repo.releases.approve(requestID: request.id)
        }

        // Nothing but the key lists went to the folder; the catalog in the bucket verifies and names an archive that is there.
        #expect(!FileSystem.exists(repo.publication.catalogPath(app: Self.app, channel: .production)))
        let key = try PublicKeyFile.read(path: directory.publicKeyPath)
        let signed = try s3.getObject(bucket: bucket, key: "v1/apps/\(Self.app)/production/catalog.json").bytes
        let catalog = try Catalog.verify(
            signed, trusting: [key], app: Self.app, channel: .production, now: Date(), source: "the bucket's catalog")
        let sha = try #require(v1.archiveSHA256 as String?)
        #expect(catalog.packs.first?.release.archiveSHA256.hex == sha)
        #expect(try tree.fileNames(in: "v1/packs") == ["\(sha).pack"])
        let archive = try s3.getObject(bucket: bucket, key: "v1/packs/\(sha).pack").bytes
        #expect(SHA256.hash(archive).hex == sha, "the archive in the bucket is the processed one")

        // Garbage: a pack no version references is removed from the bucket, the live one stays.
        let stray = String(repeating: "0", count: 64)
        try tree.write([1, 2, 3], at: "v1/packs/\(stray).pack")
        #expect(try tree.exists("v1/packs/\(stray).pack"))
        try repo.uploads.collectGarbage()
        #expect(try tree.fileNames(in: "v1/packs") == ["\(sha).pack"])
        #expect(try !tree.exists("v1/packs/\(stray).pack"))
        #expect(try tree.exists("v1/apps/\(Self.app)"), "a folder exists in a bucket when a key is under it")

        // A second repository opened on the same folder and bucket adds nothing: the key lists are there.
        let before = try s3.listAllObjects(bucket: bucket)
        _ = try Repository(directory: directory, tree: tree)
        #expect(try s3.listAllObjects(bucket: bucket) == before)
    }

    @Test func aFolderMovedToABucketIsRepublishedThereAtStart() throws {
        let store = try ObjectStore.shared()
        let (s3, bucket) = try store.newBucket("move")
        let dir = try TemporaryDirectory("s3move")
        defer { dir.remove() }
        let directory = try RepositoryDirectory(path: dir.at("data"))
        // A year of the folder: releases and a key rotation, all in DIR/public.
        let local = try Repository(directory: directory)
        try local.apps.create(Self.app)
        try local.apps.createPack(app: Self.app, id: "Levels")
        _ = try Self.upload(local, seed: 21)
        try local.releases.release(app: Self.app, pack: "Levels", version: 1, channel: .internal)
        try local.publication.rotateKey()
        let before = try Self.localFiles(directory.publicTreePath)
        let key = try PublicKeyFile.read(path: directory.publicKeyPath)
        let folderCatalog = try Catalog.verify(
            Array(
                Data(contentsOf: URL(fileURLWithPath: local.publication.catalogPath(app: Self.app, channel: .internal)))
            ),
            trusting: [key], app: Self.app, channel: .internal, now: Date(), source: "the folder's catalog")

        // Then the same folder with the bucket as its tree, as `backlot serve --storage` starts: every channel is republished.
        let moved = try Repository(
            directory: directory, tree: S3PublishedTree(client: s3, bucket: bucket, prefix: "tree"))
        try moved.publication.resign(margin: .infinity)
        #expect(
            try s3.listAllObjects(bucket: bucket).map(\.key).sorted() == before.map { "tree/" + $0 },
            "every file of the folder's tree is in the bucket")
        for relative in before where !relative.hasSuffix("catalog.json") {
            let bytes = try s3.getObject(bucket: bucket, key: "tree/" + relative).bytes
            #expect(
                bytes
                    == (try FileDescriptor.readWholeFile(
                        directory.publicTreePath + "/" + relative, atMost: 64 << 20, what: "a tree file")),
                "\(relative)")
        }
        let signed = try s3.getObject(bucket: bucket, key: "tree/v1/apps/\(Self.app)/internal/catalog.json").bytes
        let bucketCatalog = try Catalog.verify(
            signed, trusting: [key], app: Self.app, channel: .internal, now: Date(), source: "the bucket's catalog")
        #expect(bucketCatalog.version > folderCatalog.version, "re-signed: a newer catalog than the folder's")
        #expect(bucketCatalog.packs.map(\.release.archiveSHA256) == folderCatalog.packs.map(\.release.archiveSHA256))
    }

    @Test func pathsOutsideTheTreeAreRefusedByBothStores() throws {
        let dir = try TemporaryDirectory("treepaths")
        defer { dir.remove() }
        let local = LocalPublishedTree(directory: try RepositoryDirectory(path: dir.at("data")))
        let remote = try S3PublishedTree(
            client: S3Client(
                configuration: S3Configuration(endpoint: "http://127.0.0.1:9"),
                credentials: S3Credentials(accessKeyID: "k", secretAccessKey: "s")), bucket: "b")
        for bad in ["../etc/passwd", "v1/../../x", "v1//x", "keys/root.json", "v1/./x", "/v1/x", "v1/x\\y", ""] {
            #expect(throws: BacklotError.self, "\(bad)") { try local.write([1], at: bad) }
            #expect(throws: BacklotError.self, "\(bad)") { try remote.write([1], at: bad) }
        }
        #expect(throws: BacklotError.self) { try S3PublishedTree(client: remote.client, bucket: "b", prefix: "a/../b") }
        #expect(!FileSystem.exists(dir.at("data/etc")))
    }
}
