import BacklotBasics
import BacklotHTTPServer
import BacklotTestSupport
import Foundation
import Testing

@testable import BacklotServer

#if canImport(Glibc)
import Glibc
#endif

/// The published tree's small files kept in memory: answered exactly as when opened, never once
/// they changed, and within their bounds.
@Suite struct SmallFileCacheTests {
    /// The body's bytes, read from its descriptor (and closing it) when the answer was opened.
    func body(_ response: HTTPResponse) -> [UInt8] {
        switch response.body {
        case .bytes(let bytes): return bytes
        case .descriptor(let fd, let offset, let length):
            defer { close(fd) }
            return (try? FileDescriptor(rawValue: fd, path: "").read(count: Int(length), at: offset)) ?? []
        case .empty, .representation, .file: return []
        }
    }

    func get(
        _ tree: StaticTree, _ path: String, method: String = "GET", _ headers: [String: String] = [:]
    )
        -> HTTPResponse
    {
        let fields = Dictionary(uniqueKeysWithValues: headers.map { ($0.key.lowercased(), $0.value) })
        return tree.respond(to: HTTPRequest(method: method, path: "/" + path, headers: fields))
    }

    /// Writes `bytes` at `path` in place (same inode), as no writer of the tree does.
    func overwrite(_ path: String, _ bytes: [UInt8]) throws {
        let fd = open(path, O_WRONLY | O_CLOEXEC)
        try #require(fd >= 0)
        defer { close(fd) }
        try bytes.withUnsafeBytes { try FileDescriptor(rawValue: fd, path: path).write($0, at: 0) }
    }

    /// A cache that keeps what it reads for an hour, and a file as soon as it is written.
    static func keepingEverything() -> SmallFileCache {
        SmallFileCache(settleTime: .zero, maximumAge: .seconds(3600))
    }

    @Test func aKeptFileIsAnsweredExactlyAsAnOpenedOne() throws {
        let dir = try TemporaryDirectory("small-files")
        defer { dir.remove() }
        var g = SeededGenerator(seed: 31)
        let content = g.bytes(3_000)
        try dir.write("public/v1/keys/root.json", content)
        let keeping = try StaticTree(root: dir.at("public"), smallFiles: Self.keepingEverything())
        let opening = try StaticTree(root: dir.at("public"), smallFiles: SmallFileCache(fileLimit: 0))
        let path = "v1/keys/root.json"
        #expect(body(get(keeping, path)) == content)
        #expect(keeping.smallFiles.kept.files == 1 && opening.smallFiles.kept.files == 0)
        let etag = try #require(get(opening, path).headers.first { $0.name == "ETag" }?.value)
        let requests: [(method: String, headers: [String: String])] = [
            ("GET", [:]), ("HEAD", [:]),
            ("GET", ["Range": "bytes=10-19"]), ("GET", ["Range": "bytes=-5"]), ("GET", ["Range": "bytes=2990-"]),
            ("GET", ["Range": "bytes=3000-"]), ("GET", ["Range": "bytes=0-1,4-5"]),
            ("GET", ["If-None-Match": etag]), ("GET", ["If-None-Match": "\"other\""]),
            ("GET", ["If-Match": "\"other\""]), ("GET", ["Range": "bytes=0-9", "If-Range": "\"other\""]),
            ("GET", ["Range": "bytes=0-9", "If-Range": etag]),
            ("HEAD", ["If-Modified-Since": "Sun, 06 Nov 1994 08:49:37 GMT"]),
        ]
        for (method, headers) in requests {
            let kept = get(keeping, path, method: method, headers)
            let opened = get(opening, path, method: method, headers)
            let label = "\(method) \(headers)"
            #expect(kept.status == opened.status, "\(label)")
            #expect(
                kept.headers.map { "\($0.name): \($0.value)" } == opened.headers.map { "\($0.name): \($0.value)" },
                "\(label)")
            #expect(body(kept) == body(opened), "\(label)")
        }
        #expect(keeping.smallFiles.kept.files == 1)
        #expect(body(get(keeping, path, ["Range": "bytes=10-19"])) == Array(content[10...19]))
    }

    @Test func theWireCarriesAKeptFileWholeInRangesAndAsAHead() throws {
        let dir = try TemporaryDirectory("small-files")
        defer { dir.remove() }
        var g = SeededGenerator(seed: 32)
        let content = g.bytes(5_000)
        try dir.write("public/v1/keys/root.json", content)
        let tree = try StaticTree(root: dir.at("public"), smallFiles: Self.keepingEverything())
        let server = try HTTPServer(configuration: .init(port: 0)) { .respond(tree.respond(to: $0)) }
        defer { server.stop() }
        let url = "http://127.0.0.1:\(server.port)/v1/keys/root.json"
        #expect(try Curl.run(url).body == content)
        #expect(tree.smallFiles.kept.files == 1)
        let again = try Curl.run(url)
        #expect(again.status == 200 && again.body == content && again.headers["content-length"] == "5000")
        // A HEAD, then a GET on the same connection (curl --next keeps it): had the HEAD's answer
        // carried a body, the GET's answer would start with it.
        let after = dir.at("after-head")
        let head = try Curl.run(url, method: "HEAD", extra: [url, "--next", "-s", "-S", "-o", after])
        #expect(head.exitCode == 0 && head.status == 200 && head.headers["content-length"] == "5000")
        #expect(try dir.read("after-head") == content)
        let part = try Curl.run(url, headers: ["Range": "bytes=4990-"])
        #expect(part.status == 206 && part.body == Array(content[4990...]))
        #expect(part.headers["content-range"] == "bytes 4990-4999/5000")
        let notModified = try Curl.run(url, headers: ["If-None-Match": try #require(again.headers["etag"])])
        #expect(notModified.status == 304 && notModified.body.isEmpty)
        #expect(tree.smallFiles.kept.files == 1)
    }

    @Test func theNextRequestSeesAFileRewrittenInPlaceASecondLater() throws {
        let dir = try TemporaryDirectory("small-files")
        defer { dir.remove() }
        let path = "v1/apps/a/catalog.json"
        let file = try dir.write("public/" + path, "first version")
        // The default settle time; the rewrite below is a second later, in another clock tick.
        let tree = try StaticTree(root: dir.at("public"), smallFiles: SmallFileCache(maximumAge: .seconds(3600)))
        Thread.sleep(forTimeInterval: 1.2)
        #expect(body(get(tree, path)) == Array("first version".utf8))
        #expect(tree.smallFiles.kept.files == 1)
        try overwrite(file, Array("FIRST VERSION".utf8))  // the same size, inode and folder
        #expect(body(get(tree, path)) == Array("FIRST VERSION".utf8))
    }

    @Test func theNextRequestSeesAFileRenamedOverRemovedOrLinked() throws {
        let dir = try TemporaryDirectory("small-files")
        defer { dir.remove() }
        let path = "v1/apps/a/catalog.json"
        let file = try dir.write("public/" + path, "first version")
        let tree = try StaticTree(root: dir.at("public"), smallFiles: Self.keepingEverything())
        #expect(body(get(tree, path)) == Array("first version".utf8))
        #expect(tree.smallFiles.kept.files == 1)

        let next = try dir.write("next.json", "first VERSION")  // the same size, renamed over it
        #expect(rename(next, file) == 0)
        #expect(body(get(tree, path)) == Array("first VERSION".utf8))
        #expect(tree.smallFiles.kept.files == 1)

        #expect(unlink(file) == 0)
        #expect(get(tree, path).status == 404)
        #expect(tree.smallFiles.kept.files == 0)
    }

    @Test func aKeptFileReplacedByALinkOrReachedThroughOneIsNotServed() throws {
        let dir = try TemporaryDirectory("small-files")
        defer { dir.remove() }
        // The file itself becomes a link to a copy outside the tree.
        let file = try dir.write("public/v1/keys/root.json", "keys")
        let tree = try StaticTree(root: dir.at("public"), smallFiles: Self.keepingEverything())
        #expect(body(get(tree, "v1/keys/root.json")) == Array("keys".utf8))
        let outside = try dir.write("outside/root.json", "keys")
        #expect(unlink(file) == 0 && symlink(outside, file) == 0)
        #expect(get(tree, "v1/keys/root.json").status == 404)

        // A folder on its way is moved out of the tree and a link to it put in its place: the
        // same file, unchanged, now reached through a link.
        try dir.write("public/v1/apps/a/catalog.json", "catalog")
        #expect(body(get(tree, "v1/apps/a/catalog.json")) == Array("catalog".utf8))
        #expect(rename(dir.at("public/v1/apps/a"), dir.at("moved")) == 0)
        #expect(symlink(dir.at("moved"), dir.at("public/v1/apps/a")) == 0)
        #expect(get(tree, "v1/apps/a/catalog.json").status == 404)
    }

    @Test func onlySettledSmallFilesAreKeptWithinTheirAgeAndBounds() throws {
        let dir = try TemporaryDirectory("small-files")
        defer { dir.remove() }
        let root = try DirectoryHandle(path: dir.path)
        let headers = { (_: stat) in StaticTree.FileHeaders(etag: "\"e\"", lastModified: "", all: []) }
        func changedAt(_ name: String) throws -> Duration {
            let (fd, st) = try root.openRegularFileWithStatus(name)
            fd.close()
            return SmallFileCache.FileIdentity(st).changedAt
        }
        func admit(_ cache: SmallFileCache, _ name: String, now: Duration? = nil) throws -> Bool {
            let (fd, st) = try root.openRegularFileWithStatus(name)
            defer { fd.close() }
            let at = try now ?? changedAt(name) + cache.settleTime
            return cache.admit(name, beneath: root, fd: fd.rawValue, status: st, now: at, headers: headers) != nil
        }

        // A file changed less than the settle time before is not kept, to the nanosecond; one
        // whose time was set into the past is judged by its change time, which was not.
        let second = Duration.seconds(1)
        try dir.write("fresh.json", "fresh")
        let changed = try changedAt("fresh.json")
        let settled = SmallFileCache(maximumAge: .seconds(10))
        let early = try admit(settled, "fresh.json", now: changed + second - .nanoseconds(1))
        let onTime = try admit(settled, "fresh.json", now: changed + second)
        #expect(!early && onTime)
        try dir.write("backdated.json", "old")
        var times = [timespec(tv_sec: 1_000_000, tv_nsec: 0), timespec(tv_sec: 1_000_000, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, dir.at("backdated.json"), &times, 0) == 0)
        let backdated = try admit(
            settled, "backdated.json", now: try changedAt("backdated.json") + second - .nanoseconds(1))
        #expect(!backdated)

        // A kept copy is used for its maximum age, then read again.
        #expect(
            settled.file(at: "fresh.json", beneath: root, now: changed + second * 11 - .nanoseconds(1))?.bytes
                == Array("fresh".utf8))
        #expect(settled.file(at: "fresh.json", beneath: root, now: changed + second * 11) == nil)
        #expect(settled.kept.files == 0 && settled.kept.bytes == 0)

        // Neither an empty file nor one over the size limit; the same file kept twice counts once.
        try dir.write("empty.json", [])
        try dir.write("large.json", [UInt8](repeating: 7, count: 101))
        try dir.write("limit.json", [UInt8](repeating: 7, count: 100))
        let small = SmallFileCache(fileLimit: 100)
        let (empty, large) = (try admit(small, "empty.json"), try admit(small, "large.json"))
        let (limit, twice) = (try admit(small, "limit.json"), try admit(small, "limit.json"))
        #expect(!empty && !large && limit && twice)
        #expect(small.kept.files == 1 && small.kept.bytes == 100)

        // Bytes and files bounded: the file just read is kept, others make room for it.
        let bounded = SmallFileCache(byteBudget: 100, entryLimit: 3, maximumAge: .seconds(3600))
        for i in 0..<8 {
            try dir.write("f\(i).json", [UInt8](repeating: UInt8(i), count: 30 + i))
            let admitted = try admit(bounded, "f\(i).json")
            #expect(admitted)
            let kept = bounded.kept
            #expect(kept.files <= 3 && kept.bytes <= 100, "after f\(i): \(kept)")
            #expect(bounded.file(at: "f\(i).json", beneath: root)?.bytes.count == 30 + i)
        }
    }
}
