import BacklotBasics
import BacklotCrypto
import BacklotHTTPServer
import BacklotRepository
import BacklotTestSupport
import Foundation
import Testing

@testable import BacklotServer

#if canImport(Glibc)
import Glibc
#endif

/// RFC 9110 semantics a resuming client relies on, over real HTTP with curl: If-Range with stale
/// validators, 304 without a zero Content-Length, Last-Modified and If-Modified-Since, If-Match,
/// the cache headers of docs/protocol.md §1, and hidden files never served.
@Suite(.serialized) struct ConditionalRequestTests {
    final class Fixture: @unchecked Sendable {
        let dir: TemporaryDirectory
        let repository: Repository
        let server: HostingServer
        let pack: [UInt8]
        let packPath: String

        init() throws {
            dir = try TemporaryDirectory("conditional")
            repository = try Repository(directory: RepositoryDirectory(path: dir.at("data")))
            var g = SeededGenerator(seed: 21)
            pack = g.bytes(50_000)
            packPath = "v1/packs/" + SHA256.hash(pack).hex + ".pack"
            try RepositoryDirectory.writePublic(bytes: pack, to: repository.directory.publicTreePath + "/" + packPath)
            server = try HostingServer(repository: repository, configuration: .init(port: 0))
        }

        deinit {
            server.stop(grace: 0)
            dir.remove()
        }

        func get(_ path: String, _ headers: [String: String] = [:], method: String = "GET") throws -> Curl.Result {
            try Curl.run(server.baseURL + path, method: method, headers: headers)
        }
    }

    @Test func ifRangeWithAStaleValidatorGetsTheWholeFile() throws {
        let f = try Fixture()
        let full = try f.get(f.packPath)
        let etag = try #require(full.headers["etag"])
        let lastModified = try #require(full.headers["last-modified"])
        let range = ["Range": "bytes=10-19"]
        // The current strong ETag or the exact Last-Modified: the part.
        for validator in [etag, lastModified] {
            let r = try f.get(f.packPath, range.merging(["If-Range": validator]) { a, _ in a })
            #expect(r.status == 206 && r.body == Array(f.pack[10...19]), "If-Range: \(validator) → \(r.status)")
        }
        // Anything else: the whole representation, never a part.
        for validator in ["\"0000\"", "W/\(etag)", HTTPDate.format(0), "Sun, 06 Nov 1994 08:49:37 GMT", "not a date"] {
            let r = try f.get(f.packPath, range.merging(["If-Range": validator]) { a, _ in a })
            #expect(r.status == 200 && r.body == f.pack, "If-Range: \(validator) → \(r.status)")
        }
        // A catalog-like file whose ETag is not content-addressed behaves the same.
        let keys = try f.get("v1/keys/root.json")
        let stale = try f.get("v1/keys/root.json", ["Range": "bytes=0-3", "If-Range": "\"1-2-3\""])
        #expect(stale.status == 200 && stale.body == keys.body)
        let fresh = try f.get("v1/keys/root.json", ["Range": "bytes=0-3", "If-Range": keys.headers["etag"]!])
        #expect(fresh.status == 206 && fresh.body == Array(keys.body.prefix(4)))
    }

    @Test func notModifiedCarriesNoZeroLengthAndDatesAreHonoured() throws {
        let f = try Fixture()
        let full = try f.get(f.packPath)
        let etag = try #require(full.headers["etag"])
        let lastModified = try #require(full.headers["last-modified"])
        #expect(HTTPDate.parse(lastModified) != nil && lastModified.hasSuffix(" GMT"))
        for method in ["GET", "HEAD"] {
            let cached = try f.get(f.packPath, ["If-None-Match": etag], method: method)
            // curl -I writes the head as its output
            #expect(cached.status == 304 && (method == "HEAD" || cached.body.isEmpty))
            #expect(
                cached.headers["content-length"] == nil || cached.headers["content-length"] == String(f.pack.count),
                "a 304 says Content-Length: \(cached.headers["content-length"] ?? "")")
            #expect(cached.headers["etag"] == etag && cached.headers["last-modified"] == lastModified)
        }
        // If-Modified-Since: 304 at or after the modification, 200 before it; ignored with If-None-Match.
        #expect(try f.get(f.packPath, ["If-Modified-Since": lastModified]).status == 304)
        let seconds = try #require(HTTPDate.parse(lastModified))
        #expect(try f.get(f.packPath, ["If-Modified-Since": HTTPDate.format(seconds + 3600)]).status == 304)
        let older = try f.get(f.packPath, ["If-Modified-Since": HTTPDate.format(seconds - 1)])
        #expect(older.status == 200 && older.body == f.pack)
        #expect(try f.get(f.packPath, ["If-Modified-Since": lastModified, "If-None-Match": "\"other\""]).status == 200)
        #expect(try f.get(f.packPath, ["If-Modified-Since": "yesterday"]).status == 200)
        // Every static answer has Last-Modified: 200, 206, 304, 416, 412.
        for r in [
            full, try f.get(f.packPath, ["Range": "bytes=0-0"]), try f.get(f.packPath, ["If-None-Match": etag]),
            try f.get(f.packPath, ["Range": "bytes=999999-"]), try f.get(f.packPath, ["If-Match": "\"x\""]),
        ] {
            #expect(r.headers["last-modified"] == lastModified, "\(r.status) has no Last-Modified")
        }
    }

    @Test func ifMatchThatDoesNotMatchIs412() throws {
        let f = try Fixture()
        let etag = try #require(try f.get(f.packPath).headers["etag"])
        #expect(try f.get(f.packPath, ["If-Match": etag]).status == 200)
        #expect(try f.get(f.packPath, ["If-Match": "\"a\", \(etag)"]).status == 200)
        #expect(try f.get(f.packPath, ["If-Match": "*"]).status == 200)
        let refused = try f.get(f.packPath, ["If-Match": "\"a\""])
        #expect(refused.status == 412 && refused.text.contains("preconditionFailed"))
        #expect(try f.get(f.packPath, ["If-Match": "W/\(etag)"]).status == 412)  // If-Match compares strongly
        #expect(try f.get(f.packPath, ["If-Match": "\"a\"", "Range": "bytes=0-1"]).status == 412)
        #expect(try f.get(f.packPath, ["If-Unmodified-Since": HTTPDate.format(0)]).status == 412)
    }

    /// Every row of docs/protocol.md §1, as the server sends it.
    @Test func cacheHeadersFollowTheProtocolTable() throws {
        let f = try Fixture()
        let tree = f.repository.directory.publicTreePath
        try RepositoryDirectory.writePublic("{}", to: tree + "/v1/keys/root-2.json")
        try FileSystem.makeDirectory(tree + "/v1/apps/a", mode: 0o755)
        try FileSystem.makeDirectory(tree + "/v1/apps/a/production", mode: 0o755)
        try RepositoryDirectory.writePublic("{}", to: tree + "/v1/apps/a/production/catalog.json")
        try FileManager.default.createDirectory(
            atPath: tree + "/v1/apple/a/production/ios/packs", withIntermediateDirectories: true)
        try RepositoryDirectory.writePublic("{}", to: tree + "/v1/apple/a/production/ios/manifest.json")
        try RepositoryDirectory.writePublic("AA01", to: tree + "/v1/apple/a/production/ios/packs/Tutorial")
        try RepositoryDirectory.writePublic("AA01", to: tree + "/v1/apple/a/production/ios/packs/Voice.json")
        let rows: [(String, String, String)] = [
            ("v1/keys/root.json", "public, max-age=300", "application/json"),
            ("v1/keys/root-1.json", "public, max-age=31536000, immutable", "application/json"),
            ("v1/keys/root-2.json", "public, max-age=31536000, immutable", "application/json"),
            ("v1/apps/a/production/catalog.json", "public, max-age=60", "application/json"),
            (f.packPath, "public, max-age=31536000, immutable", "application/octet-stream"),
            ("v1/apple/a/production/ios/manifest.json", "public, max-age=60", "application/json"),
            ("v1/apple/a/production/ios/packs/Tutorial", "no-cache", "application/octet-stream"),
            ("v1/apple/a/production/ios/packs/Voice.json", "no-cache", "application/octet-stream"),
        ]
        for (path, cache, type) in rows {
            let r = try f.get(path)
            #expect(
                r.status == 200 && r.headers["cache-control"] == cache && r.headers["content-type"] == type,
                "\(path): \(r.status) \(r.headers["cache-control"] ?? "-") \(r.headers["content-type"] ?? "-")")
            #expect(
                r.headers["etag"] != nil && r.headers["last-modified"] != nil && r.headers["accept-ranges"] == "bytes")
        }
        #expect(try f.get(f.packPath).headers["etag"] == "\"\(SHA256.hash(f.pack).hex)\"")
    }

    @Test func hiddenFilesAreNeverServed() throws {
        let f = try Fixture()
        let tree = f.repository.directory.publicTreePath
        try RepositoryDirectory.writePublic("half", to: tree + "/v1/keys/.root.json.tmp-abc123")
        try FileSystem.makeDirectory(tree + "/v1/.hidden", mode: 0o755)
        try RepositoryDirectory.writePublic("x", to: tree + "/v1/.hidden/file.json")
        for path in ["v1/keys/.root.json.tmp-abc123", "v1/.hidden/file.json", ".well-known/x"] {
            let r = try f.get(path)
            #expect(r.status == 404 && !r.text.contains("half"), "\(path) → \(r.status)")
        }
    }

    /// A file's time comes from outside too: one dated before 1970 is served, not a trap.
    @Test func aFileDatedBefore1970IsServed() throws {
        let f = try Fixture()
        let path = f.repository.directory.publicTreePath + "/v1/keys/root-1.json"
        var times = [timespec(tv_sec: -86_400 * 365, tv_nsec: 5), timespec(tv_sec: -86_400 * 365, tv_nsec: 5)]
        #expect(utimensat(AT_FDCWD, path, &times, 0) == 0)
        let r = try f.get("v1/keys/root-1.json")
        #expect(r.status == 200 && r.headers["last-modified"] == "Wed, 01 Jan 1969 00:00:00 GMT", "\(r.headers)")
        #expect(try f.get("v1/keys/root-1.json", ["If-Modified-Since": "Wed, 01 Jan 1969 00:00:00 GMT"]).status == 304)
    }

    @Test func httpDatesInTheThreeForms() {
        #expect(HTTPDate.format(784_111_777) == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT") == 784_111_777)
        #expect(HTTPDate.parse("Sunday, 06-Nov-94 08:49:37 GMT") == 784_111_777)
        #expect(HTTPDate.parse("Sun Nov  6 08:49:37 1994") == 784_111_777)
        #expect(HTTPDate.format(0) == "Thu, 01 Jan 1970 00:00:00 GMT")
        #expect(HTTPDate.parse(HTTPDate.format(1_764_428_400)) == 1_764_428_400)
        for bad in [
            "", "Sun, 06 Nov 1994 08:49:37 UTC", "Sun, 99 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1994 25:49:37 GMT",
            "99999999999999999999",
        ] {
            #expect(HTTPDate.parse(bad) == nil, "\(bad)")
        }
    }
}
