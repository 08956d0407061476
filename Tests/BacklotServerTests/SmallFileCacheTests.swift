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

    /// Writes `bytes` at `relative` in place (same inode), as no writer of the tree does.
    func overwrite(_ path: String, _ bytes: [UInt8]) throws {
        let fd = open(path, O_WRONLY | O_CLOEXEC)
        #expect(fd >= 0)
        defer { close(fd) }
        try bytes.withUnsafeBytes { try FileDescriptor(rawValue: fd, path: path).write($0, at: 0) }
    }

    @Test func aKeptFileIsAnsweredExactlyAsAnOpenedOne() throws {
        let dir = try TemporaryDirectory("small-files")
        defer { dir.remove() }
        var g = SeededGenerator(seed: 31)
        let content = g.bytes(3_000)
        try dir.write("public/v1/keys/root.json", content)
        let keeping = try StaticTree(root: dir.at("public"), smallFiles: SmallFileCache(settleTime: 0))
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
            #expect(kept.headers.map { "\($0.name): \($0.value)" } == opened.headers.map { "\($0.name): \($0.value)" })
            #expect(body(kept) == body(opened), "\(label)")
        }
        #expect(body(get(keeping, path, ["Range": "bytes=10-19"])) == Array(content[10...19]))
    }

    @Test func theNextRequestSeesAFileReplacedRewrittenRemovedOrLinked() throws {
        let dir = try TemporaryDirectory("small-files")
        defer { dir.remove() }
        let path = "v1/apps/a/catalog.json"
        let file = try dir.write("public/" + path, "first version")
        // The default settle time: the in-place rewrite below is a second later, in another tick.
        let tree = try StaticTree(root: dir.at("public"))
        Thread.sleep(forTimeInterval: 1.2)
        #expect(body(get(tree, path)) == Array("first version".utf8))
        #expect(tree.smallFiles.kept.files == 1)

        try overwrite(file, Array("FIRST VERSION".utf8))  // the same size, inode and folder
        #expect(body(get(tree, path)) == Array("FIRST VERSION".utf8))

        try dir.write("public/" + path, "second version")  // a new file renamed over it
        #expect(body(get(tree, path)) == Array("second version".utf8))

        #expect(unlink(file) == 0)
        #expect(get(tree, path).status == 404)
    }

    @Test func aKeptFileReplacedByALinkOrReachedThroughOneIsNotServed() throws {
        let dir = try TemporaryDirectory("small-files")
        defer { dir.remove() }
        // The file itself becomes a link to a copy outside the tree.
        let file = try dir.write("public/v1/keys/root.json", "keys")
        let tree = try StaticTree(root: dir.at("public"), smallFiles: SmallFileCache(settleTime: 0))
        #expect(body(get(tree, "v1/keys/root.json")) == Array("keys".utf8))
        let outside = try dir.write("outside/root.json", "keys")
        #expect(unlink(file) == 0 && symlink(outside, file) == 0)
        #expect(get(tree, "v1/keys/root.json").status == 404)

        // A folder on its way becomes a link to a folder outside holding a file of the same name.
        try dir.write("public/v1/apps/a/catalog.json", "catalog")
        #expect(body(get(tree, "v1/apps/a/catalog.json")) == Array("catalog".utf8))
        try dir.write("elsewhere/catalog.json", "secret!")
        #expect(rename(dir.at("public/v1/apps/a"), dir.at("moved")) == 0)
        #expect(symlink(dir.at("elsewhere"), dir.at("public/v1/apps/a")) == 0)
        #expect(get(tree, "v1/apps/a/catalog.json").status == 404)
    }

    @Test func onlySettledSmallFilesAreKeptWithinTheBounds() throws {
        let dir = try TemporaryDirectory("small-files")
        defer { dir.remove() }
        let root = try DirectoryHandle(path: dir.path)
        let headers = { (_: stat) in StaticTree.FileHeaders(etag: "\"e\"", lastModified: "", all: []) }
        func admit(_ cache: SmallFileCache, _ name: String, now: Int64? = nil) throws -> Bool {
            let (fd, st) = try root.openRegularFileWithStatus(name)
            defer { fd.close() }
            let at = now ?? Int64(st.st_ctim.tv_sec) + 1
            return cache.admit(name, fd: fd.rawValue, status: st, now: at, headers: headers) != nil
        }

        // A file changed this second is not kept; a second later it is.
        try dir.write("fresh.json", "fresh")
        let settled = SmallFileCache()
        let (fd, st) = try root.openRegularFileWithStatus("fresh.json")
        fd.close()
        let thisSecond = try admit(settled, "fresh.json", now: Int64(st.st_ctim.tv_sec))
        let aSecondLater = try admit(settled, "fresh.json", now: Int64(st.st_ctim.tv_sec) + 1)
        #expect(!thisSecond && aSecondLater)
        #expect(settled.file(at: "fresh.json", beneath: root)?.bytes == Array("fresh".utf8))

        // Neither an empty file nor one over the size limit.
        try dir.write("empty.json", [])
        try dir.write("large.json", [UInt8](repeating: 7, count: 101))
        try dir.write("limit.json", [UInt8](repeating: 7, count: 100))
        let small = SmallFileCache(fileLimit: 100)
        let (empty, large, limit) = (
            try admit(small, "empty.json"), try admit(small, "large.json"), try admit(small, "limit.json")
        )
        #expect(!empty && !large && limit)

        // Bytes and entries bounded: the file just read is kept, others make room for it.
        let bounded = SmallFileCache(byteBudget: 100, entryLimit: 3)
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
