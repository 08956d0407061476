import BacklotBasics
import BacklotS3
import BacklotTestSupport
import Foundation
import Synchronization
import Testing

/// BacklotS3 against an object store that lies (``ScriptedHTTPServer``): what it answers is not
/// trusted, and no number in it can crash the server or keep it asking forever.
@Suite(.serialized) struct HostileObjectStoreTests {
    func client(_ server: ScriptedHTTPServer) throws -> S3Client {
        let retry = S3RetryPolicy(maximumAttempts: 1)
        return S3Client(
            configuration: try S3Configuration(
                endpoint: "http://127.0.0.1:\(server.port)", pathStyle: true, retry: retry),
            credentials: S3Credentials(accessKeyID: "AK", secretAccessKey: "SK"))
    }

    /// A 206 whose Content-Range starts past the object's end (`bytes 8388608-8388615/1`) used to
    /// wrap `size - start` and trap; it is refused, naming the range.
    @Test func aRangeStartingPastTheObjectsEndIsRefused() throws {
        let server = try ScriptedHTTPServer { _ in
            .init(
                status: 206, headers: [("Content-Range", "bytes 8388608-8388615/1")],
                body: [UInt8](repeating: 7, count: 8))
        }
        defer { server.stop() }
        let error = #expect(throws: BacklotError.self) {
            _ = try self.client(server).getObject(bucket: "b", key: "k", range: .bytes(8_388_608, 8_388_615))
        }
        #expect(error?.code == .objectStore)
        #expect(
            error?.message.contains("starts at 8388608 of an object of 1 bytes") == true, "\(String(describing: error))"
        )
    }

    /// A HEAD saying the source of a copy is 2^64 − 1 bytes used to overflow the part count; the
    /// copy is refused before an upload is begun, naming S3's largest object.
    @Test func aCopySourceLargerThanS3AllowsIsRefused() throws {
        let server = try ScriptedHTTPServer { request in
            request.method == "HEAD"
                ? .init(status: 200, headers: [("Content-Length", "18446744073709551615"), ("ETag", "\"e\"")])
                : .xml("<InitiateMultipartUploadResult><UploadId>u</UploadId></InitiateMultipartUploadResult>")
        }
        defer { server.stop() }
        let error = #expect(throws: BacklotError.self) {
            try self.client(server).copyObject(bucket: "b", key: "k", toBucket: "b", key: "k2")
        }
        #expect(error?.message.contains("more than S3's largest object") == true, "\(String(describing: error))")
        #expect(server.requests == 1, "only the HEAD: no multipart upload begun")
    }

    /// An answer with 300 KB of headers is stopped at 256 KiB, as every other transfer of the
    /// HTTP client already was; the streamed one (what S3 reads go through) did not count them.
    @Test func headersBeyondTheirBoundStopTheTransfer() throws {
        let server = try ScriptedHTTPServer { _ in
            .init(
                status: 200,
                headers: (0..<3_000).map { ("X-Pad-\($0)", String(repeating: "p", count: 100)) } + [("ETag", "\"e\"")],
                body: [1, 2, 3])
        }
        defer { server.stop() }
        let error = #expect(throws: BacklotError.self) {
            _ = try self.client(server).getObject(bucket: "b", key: "k")
        }
        #expect("\(String(describing: error))".contains("bytes of headers"), "\(String(describing: error))")
    }

    /// Listings that say more follows with pages adding nothing (ListParts with markers that
    /// alternate, ListObjectsV2 with a new token each time, ListMultipartUploads likewise, its
    /// pages holding an upload without a key, which adds nothing either) end with an error after
    /// a bounded number of pages, not never.
    @Test func listingsThatNeverAdvanceEnd() throws {
        let page = Atomic<Int>(0)
        let server = try ScriptedHTTPServer { request in
            let n = page.add(1, ordering: .relaxed).newValue
            if request.target.contains("uploadId=") {
                return .xml(
                    "<ListPartsResult><IsTruncated>true</IsTruncated><NextPartNumberMarker>\(n % 2 + 1)</NextPartNumberMarker></ListPartsResult>"
                )
            }
            if request.target.contains("uploads") {
                return .xml(
                    "<ListMultipartUploadsResult><IsTruncated>true</IsTruncated><NextKeyMarker>k\(n % 2)</NextKeyMarker><Upload></Upload></ListMultipartUploadsResult>"
                )
            }
            return .xml(
                "<ListBucketResult><IsTruncated>true</IsTruncated><NextContinuationToken>t\(n)</NextContinuationToken></ListBucketResult>"
            )
        }
        defer { server.stop() }
        let s3 = try client(server)
        let calls: [(String, () throws -> Void)] = [
            ("LIST parts", { _ = try s3.listParts(bucket: "b", key: "k", uploadID: "u") }),
            ("LIST objects", { _ = try s3.listAllObjects(bucket: "b", prefix: "p/") }),
            ("LIST multipart uploads", { _ = try s3.listMultipartUploads(bucket: "b") }),
        ]
        for (name, call) in calls {
            page.store(0, ordering: .relaxed)
            let error = #expect(throws: BacklotError.self) { try call() }
            #expect(error?.code == .objectStore, "\(name)")
            #expect(error?.message.contains("pages listed nothing") == true, "\(name): \(String(describing: error))")
            #expect(page.load(ordering: .relaxed) == 1_001, "\(name): asked \(page.load(ordering: .relaxed)) times")
        }
    }
}
