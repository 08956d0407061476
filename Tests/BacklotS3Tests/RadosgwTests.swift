import BacklotBasics
import BacklotCrypto
import BacklotS3
import BacklotTestSupport
import Foundation
import Testing

/// BacklotS3 against a real Ceph radosgw (which checks signatures and payload hashes), started
/// once for the process through `scripts/services` (``ObjectStore``).
@Suite(.serialized) struct RadosgwTests {
    let store: ObjectStore

    init() throws {
        store = try ObjectStore.shared()
    }

    /// Deterministic bytes from a printed seed.
    static func bytes(_ count: Int, seed: UInt64) -> [UInt8] {
        var generator = SeededGenerator(seed: seed)
        return generator.bytes(count)
    }

    @Test func putGetRangeHeadDeleteList() throws {
        let (s3, bucket) = try store.newBucket("basics")
        print("seed 1")
        let data = Self.bytes(100_000, seed: 1)
        let etag = try s3.putObject(
            bucket: bucket, key: "packs/a b+c.aar", body: .bytes(data), contentType: "application/octet-stream",
            cacheControl: "public, max-age=31536000, immutable")
        #expect(etag.hasPrefix("\""))

        let head = try #require(try s3.headObject(bucket: bucket, key: "packs/a b+c.aar"))
        #expect(head.size == 100_000)
        #expect(head.etag == etag)
        #expect(head.contentType == "application/octet-stream")
        #expect(head.cacheControl == "public, max-age=31536000, immutable")

        let whole = try s3.getObject(bucket: bucket, key: "packs/a b+c.aar")
        #expect(whole.bytes == data)
        #expect(whole.info.etag == etag)

        let range = try s3.getObject(bucket: bucket, key: "packs/a b+c.aar", range: .bytes(1000, 1999))
        #expect(range.bytes == Array(data[1000...1999]))
        #expect(range.info.size == 100_000)
        #expect(range.info.rangeStart == 1000)
        let suffix = try s3.getObject(bucket: bucket, key: "packs/a b+c.aar", range: .suffix(100))
        #expect(suffix.bytes == Array(data.suffix(100)))
        let from = try s3.getObject(bucket: bucket, key: "packs/a b+c.aar", range: .from(99_990))
        #expect(from.bytes == Array(data.suffix(10)))

        // A listing of more keys than a page holds, under a prefix, with odd characters.
        for name in ["b", "c&d", "e/f", "g"] {
            try s3.putObject(bucket: bucket, key: "packs/\(name)", body: .bytes(Array(name.utf8)))
        }
        try s3.putObject(bucket: bucket, key: "other/x", body: .bytes([1]))
        let first = try s3.listObjects(bucket: bucket, prefix: "packs/", maximumKeys: 2)
        #expect(first.entries.count == 2)
        #expect(first.continuationToken != nil)
        let all = try s3.listAllObjects(bucket: bucket, prefix: "packs/")
        #expect(all.map(\.key) == ["packs/a b+c.aar", "packs/b", "packs/c&d", "packs/e/f", "packs/g"])
        #expect(all.first?.size == 100_000)
        let rolled = try s3.listObjects(bucket: bucket, prefix: "packs/", delimiter: "/")
        #expect(rolled.commonPrefixes == ["packs/e/"])

        try s3.deleteObject(bucket: bucket, key: "packs/a b+c.aar")
        #expect(try s3.headObject(bucket: bucket, key: "packs/a b+c.aar") == nil)
        try s3.deleteObject(bucket: bucket, key: "packs/a b+c.aar")  // deleting what is gone succeeds
        let missing = #expect(throws: BacklotError.self) { try s3.getObject(bucket: bucket, key: "packs/a b+c.aar") }
        #expect(missing?.code == .notFound)
        #expect(try s3.bucketExists(bucket))
        #expect(try !s3.bucketExists("t-never-made-\(getpid())"))
    }

    @Test func virtualHostedAddressing() throws {
        let (s3, bucket) = try store.newBucket("vhost", pathStyle: false)
        #expect(s3.configuration.endpoint.contains("localhost"))
        try s3.putObject(bucket: bucket, key: "k", body: .bytes(Array("virtual".utf8)))
        #expect(try s3.getObject(bucket: bucket, key: "k").bytes == Array("virtual".utf8))
        #expect(try s3.listAllObjects(bucket: bucket).map(\.key) == ["k"])
    }

    @Test func conditionalPutsCompareAndSwap() throws {
        let (s3, bucket) = try store.newBucket("cas")
        let v1 = try s3.putObject(
            bucket: bucket, key: "catalog.json", body: .bytes(Array("v1".utf8)), condition: .ifAbsent)

        // If-None-Match: * on an existing key: 412, nothing written.
        let exists = #expect(throws: BacklotError.self) {
            try s3.putObject(
                bucket: bucket, key: "catalog.json", body: .bytes(Array("other".utf8)), condition: .ifAbsent)
        }
        #expect(exists?.code == .preconditionFailed)
        #expect(exists?.message.contains("s3://\(bucket)/catalog.json") == true)
        #expect(try s3.getObject(bucket: bucket, key: "catalog.json").bytes == Array("v1".utf8))

        // If-Match with the ETag read: replaced.
        let v2 = try s3.putObject(
            bucket: bucket, key: "catalog.json", body: .bytes(Array("v2".utf8)), condition: .ifMatches(v1))
        #expect(v2 != v1)

        // If-Match with a stale ETag (someone else wrote meanwhile): 412, nothing written.
        let stale = #expect(throws: BacklotError.self) {
            try s3.putObject(
                bucket: bucket, key: "catalog.json", body: .bytes(Array("v3".utf8)), condition: .ifMatches(v1))
        }
        #expect(stale?.code == .preconditionFailed)
        #expect(try s3.getObject(bucket: bucket, key: "catalog.json").bytes == Array("v2".utf8))

        // A conditional read of a changed object.
        let changed = #expect(throws: BacklotError.self) {
            try s3.getObject(bucket: bucket, key: "catalog.json", ifMatch: v1)
        }
        #expect(changed?.code == .preconditionFailed)
    }

    @Test func multipartAcrossAPartBoundaryStreamedBothWays() throws {
        let (s3, bucket) = try store.newBucket("multipart")
        let dir = try TemporaryDirectory("s3-multipart")
        defer { dir.remove() }
        print("seed 2")
        let size = (5 << 20) + 1000
        let data = Self.bytes(size, seed: 2)
        let file = try dir.write("big.aar", data)

        let id = try s3.createMultipartUpload(
            bucket: bucket, key: "packs/big.aar", contentType: "application/octet-stream")
        let p1 = try s3.uploadPart(
            bucket: bucket, key: "packs/big.aar", uploadID: id, partNumber: 1,
            body: .file(path: file, offset: 0, length: 5 << 20))
        let p2 = try s3.uploadPart(
            bucket: bucket, key: "packs/big.aar", uploadID: id, partNumber: 2, body: .bytes(Array(data[(5 << 20)...])))
        #expect(try s3.headObject(bucket: bucket, key: "packs/big.aar") == nil)  // not there before completion
        let etag = try s3.completeMultipartUpload(bucket: bucket, key: "packs/big.aar", uploadID: id, parts: [p2, p1])
        #expect(etag.hasSuffix("-2\""))

        let head = try #require(try s3.headObject(bucket: bucket, key: "packs/big.aar"))
        #expect(head.size == UInt64(size))
        #expect(head.contentType == "application/octet-stream")

        // Streamed to a callback: pieces are bounded, the bytes are the file's.
        var hasher = SHA256()
        var largest = 0
        let info = try s3.getObject(bucket: bucket, key: "packs/big.aar") { piece in
            largest = max(largest, piece.count)
            hasher.update(piece)
        }
        #expect(hasher.finalize() == SHA256.hash(data))
        #expect(info.bodyLength == UInt64(size))
        #expect(largest <= 256 << 10)

        // Streamed to a file.
        let copy = dir.at("copy.aar")
        _ = try s3.getObject(bucket: bucket, key: "packs/big.aar", toFile: copy)
        #expect(try SHA256.hash(fileAt: copy) == SHA256.hash(data))

        // A range across the boundary between the parts.
        let boundary = 5 << 20
        let across = try s3.getObject(
            bucket: bucket, key: "packs/big.aar", range: .bytes(UInt64(boundary - 500), UInt64(boundary + 499)))
        #expect(across.bytes == Array(data[(boundary - 500)..<(boundary + 500)]))
    }

    @Test func anUploadBegunByOneClientIsResumedByAnotherFromListParts() throws {
        let (first, bucket) = try store.newBucket("resume")
        print("seed 3")
        let data = Self.bytes((5 << 20) + 1000, seed: 3)
        let id = try first.createMultipartUpload(bucket: bucket, key: "upload/1")
        _ = try first.uploadPart(
            bucket: bucket, key: "upload/1", uploadID: id, partNumber: 1, body: .bytes(Array(data[..<(5 << 20)])))

        // Another instance, knowing only the bucket and the key prefix.
        let second = try store.client()
        let uploads = try second.listMultipartUploads(bucket: bucket, prefix: "upload/")
        #expect(uploads.map(\.key) == ["upload/1"])
        #expect(uploads.first?.uploadID == id)
        let done = try second.listParts(bucket: bucket, key: "upload/1", uploadID: id)
        #expect(done.map(\.number) == [1])
        #expect(done.first?.size == 5 << 20)
        let p2 = try second.uploadPart(
            bucket: bucket, key: "upload/1", uploadID: id, partNumber: 2, body: .bytes(Array(data[(5 << 20)...])))
        try second.completeMultipartUpload(bucket: bucket, key: "upload/1", uploadID: id, parts: done + [p2])
        #expect(try second.getObject(bucket: bucket, key: "upload/1").bytes == data)
        #expect(try second.listMultipartUploads(bucket: bucket).isEmpty)
    }

    @Test func aFileIsUploadedInPartsAndAnInterruptedUploadResumes() throws {
        let (s3, bucket) = try store.newBucket("file")
        let dir = try TemporaryDirectory("s3-file")
        defer { dir.remove() }
        print("seed 5")
        let data = Self.bytes((12 << 20) + 7, seed: 5)
        let file = try dir.write("f.aar", data)
        var began: String?
        let etag = try s3.uploadFile(
            bucket: bucket, key: "whole", path: file, partSize: 5 << 20, contentType: "application/octet-stream"
        ) { began = $0 }
        #expect(etag.hasSuffix("-3\""))
        #expect(began != nil)
        #expect(try s3.getObject(bucket: bucket, key: "whole").bytes == data)

        // Interrupted after its first part; another client finishes it.
        let id = try s3.createMultipartUpload(bucket: bucket, key: "resumed")
        let first = try s3.uploadPart(
            bucket: bucket, key: "resumed", uploadID: id, partNumber: 1,
            body: .file(path: file, offset: 0, length: 5 << 20))
        let other = try store.client()
        try other.uploadFile(bucket: bucket, key: "resumed", path: file, partSize: 5 << 20, resuming: id)
        #expect(try other.getObject(bucket: bucket, key: "resumed").bytes == data)
        #expect(first.size == 5 << 20)

        // A small file is one PUT.
        let small = try dir.write("small", [1, 2, 3])
        #expect(try !s3.uploadFile(bucket: bucket, key: "small", path: small).contains("-"))
    }

    @Test func copiesInsideTheStoreWholeAndPartByPartWithNewHeaders() throws {
        let (s3, bucket) = try store.newBucket("copy")
        print("seed 8")
        let data = Self.bytes((12 << 20) + 5, seed: 8)
        try s3.putObject(
            bucket: bucket, key: "blobs/a b.pack", body: .bytes(data), contentType: "application/x-private")
        // One CopyObject: the copy takes the headers given, not the source's.
        try s3.copyObject(
            bucket: bucket, key: "blobs/a b.pack", toBucket: bucket, key: "v1/packs/one.pack",
            contentType: "application/octet-stream", cacheControl: "public, max-age=31536000, immutable")
        let one = try #require(try s3.headObject(bucket: bucket, key: "v1/packs/one.pack"))
        #expect(
            one.size == UInt64(data.count) && one.contentType == "application/octet-stream"
                && one.cacheControl == "public, max-age=31536000, immutable")
        // Part by part (UploadPartCopy), as objects over 5 GiB are: three parts of 5, 5 and 2 MiB.
        try s3.copyObject(
            bucket: bucket, key: "blobs/a b.pack", toBucket: bucket, key: "v1/packs/parts.pack",
            contentType: "application/octet-stream", cacheControl: "no-cache", singleCopyLimit: 5 << 20,
            partSize: 5 << 20)
        #expect(try s3.getObject(bucket: bucket, key: "v1/packs/parts.pack", limit: 64 << 20).bytes == data)
        #expect(try s3.headObject(bucket: bucket, key: "v1/packs/parts.pack")?.cacheControl == "no-cache")
        #expect(try s3.listMultipartUploads(bucket: bucket).isEmpty)
        // A missing source is named.
        #expect { try s3.copyObject(bucket: bucket, key: "blobs/missing", toBucket: bucket, key: "x") } throws: {
            ($0 as? BacklotError)?.code == .notFound
        }
    }

    @Test func anAbortedUploadIsGone() throws {
        let (s3, bucket) = try store.newBucket("abort")
        let id = try s3.createMultipartUpload(bucket: bucket, key: "x")
        _ = try s3.uploadPart(bucket: bucket, key: "x", uploadID: id, partNumber: 1, body: .bytes([1, 2, 3]))
        try s3.abortMultipartUpload(bucket: bucket, key: "x", uploadID: id)
        let gone = #expect(throws: BacklotError.self) { try s3.listParts(bucket: bucket, key: "x", uploadID: id) }
        #expect(gone?.code == .notFound)
        #expect(gone?.message.contains("multipart upload") == true)
    }

    @Test func aWrongSecretIsACredentialsErrorNamingTheEndpointAndBucket() throws {
        let (_, bucket) = try store.newBucket("creds")
        let wrong = S3Credentials(accessKeyID: store.credentials.accessKeyID, secretAccessKey: "not-the-secret")
        let s3 = try store.client(credentials: wrong)
        let e = #expect(throws: BacklotError.self) { try s3.putObject(bucket: bucket, key: "k", body: .bytes([1])) }
        #expect(e?.code == .forbidden)
        #expect(e?.message.contains("credentials are wrong") == true)
        #expect(e?.message.contains(store.endpoint) == true)
        #expect(e?.message.contains("SignatureDoesNotMatch") == true)
        #expect(e?.hint?.contains(bucket) == true)
        let unknown = try store.client(
            credentials: S3Credentials(accessKeyID: "NOSUCHKEY0000000000", secretAccessKey: "x"))
        let e2 = #expect(throws: BacklotError.self) { try unknown.listObjects(bucket: bucket) }
        #expect(e2?.code == .forbidden)
        #expect(e2?.message.contains("InvalidAccessKeyId") == true)
    }

    @Test func aMissingBucketIsNamed() throws {
        let s3 = try store.client()
        let bucket = "t-missing-\(getpid())"
        let e = #expect(throws: BacklotError.self) { try s3.getObject(bucket: bucket, key: "k") }
        #expect(e?.code == .notFound)
        #expect(e?.message.contains("bucket \(bucket) does not exist at \(store.endpoint)") == true)
        let put = #expect(throws: BacklotError.self) { try s3.putObject(bucket: bucket, key: "k", body: .bytes([1])) }
        #expect(put?.code == .notFound)
    }

    @Test func radosgwRefusesAWrongPayloadHash() throws {
        let (honest, bucket) = try store.newBucket("payload")
        var s3 = honest
        s3.payloadHashOverride = SHA256.hash(Array("something else".utf8)).hex
        let e = #expect(throws: BacklotError.self) {
            try s3.putObject(bucket: bucket, key: "k", body: .bytes(Array("the real body".utf8)))
        }
        #expect(e?.code == .corruptArchive)
        #expect(e?.message.contains("XAmzContentSHA256Mismatch") == true)
        #expect(try honest.headObject(bucket: bucket, key: "k") == nil)
    }

    @Test func aClock20MinutesAheadIsReportedAsSuch() throws {
        let (_, bucket) = try store.newBucket("skew")
        let s3 = try store.client(clock: { Date().addingTimeInterval(20 * 60) })
        let e = #expect(throws: BacklotError.self) { try s3.putObject(bucket: bucket, key: "k", body: .bytes([1])) }
        #expect(e?.code == .clockSkew)
        #expect(e?.message.contains("about 20 minutes ahead of the server's") == true)
        let behind = try store.client(clock: { Date().addingTimeInterval(-20 * 60) })
        let e2 = #expect(throws: BacklotError.self) { try behind.listObjects(bucket: bucket) }
        #expect(e2?.message.contains("about 20 minutes behind the server's") == true)
    }

    /// On a radosgw of its own: it stops the gateway. The cluster (and the upload's parts) stay; the upload resumes.
    @Test func theGatewayStoppedMidUploadAndRestartedTheUploadResumes() throws {
        try ObjectStore.withPrivateGateway { store in
            let (s3, bucket) = try store.newBucket("restart")
            print("seed 4")
            let data = Self.bytes((5 << 20) + 1000, seed: 4)
            let id = try s3.createMultipartUpload(bucket: bucket, key: "big")
            let p1 = try s3.uploadPart(
                bucket: bucket, key: "big", uploadID: id, partNumber: 1, body: .bytes(Array(data[..<(5 << 20)])))

            try store.stopGateway()
            var restarted = false
            defer { if !restarted { try? store.startGateway() } }
            let impatient = try store.client(
                retry: S3RetryPolicy(
                    maximumAttempts: 3, initialDelay: .milliseconds(20), maximumDelay: .milliseconds(50)))
            let down = #expect(throws: BacklotError.self) {
                try impatient.uploadPart(
                    bucket: bucket, key: "big", uploadID: id, partNumber: 2, body: .bytes(Array(data[(5 << 20)...])))
            }
            #expect(down?.code == .transport)
            #expect(down?.message.contains("after 3 attempts") == true)
            #expect(down?.message.contains(store.endpoint) == true)

            try store.startGateway()
            restarted = true
            let parts = try s3.listParts(bucket: bucket, key: "big", uploadID: id)
            #expect(parts == [p1])
            let p2 = try s3.uploadPart(
                bucket: bucket, key: "big", uploadID: id, partNumber: 2, body: .bytes(Array(data[(5 << 20)...])))
            try s3.completeMultipartUpload(bucket: bucket, key: "big", uploadID: id, parts: parts + [p2])
            #expect(try s3.getObject(bucket: bucket, key: "big").bytes == data)
        }
    }
}
