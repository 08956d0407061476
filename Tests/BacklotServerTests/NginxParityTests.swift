import BacklotBasics
import BacklotRepository
import BacklotTestSupport
import Foundation
import Testing

@testable import BacklotServer

#if canImport(Glibc)
import Glibc
#endif

/// nginx (Debian's nginx-light) with a bare `root` directive serves the published tree byte for
/// byte: the tree needs no Backlot server to be hosted.
@Suite(.serialized) struct NginxParityTests {
    @Test func nginxWithABareRootServesTheSameBytes() throws {
        let dir = try TemporaryDirectory("nginx")
        defer { dir.remove() }
        chmod(dir.path, 0o755)  // nginx's workers run as an unprivileged user and must reach the tree
        let repo = try RepositoryDirectory(path: dir.at("data"))
        var g = SeededGenerator(seed: 5)
        try FileSystem.makeDirectory(repo.publicTreePath + "/v1/packs")
        try RepositoryDirectory.writePublic(
            bytes: g.bytes(50_000), to: repo.publicTreePath + "/v1/packs/" + String(repeating: "a", count: 64) + ".pack"
        )

        let nginx = try Nginx(root: repo.publicTreePath, workDirectory: dir.path)
        defer { nginx.stop() }
        let ours = try HostingServer(repository: try Repository(directory: repo), configuration: .init(port: 0))
        defer { ours.stop() }

        let nginxBase = nginx.baseURL
        let ready = nginx.waitUntilServing("v1/keys/root.json")
        #expect(ready, "nginx did not start: \((try? String(contentsOfFile: nginx.errorLog, encoding: .utf8)) ?? "")")
        let pack = "v1/packs/" + String(repeating: "a", count: 64) + ".pack"
        for (path, range) in [
            ("v1/keys/root.json", nil), ("v1/keys/root-1.json", nil), (pack, "bytes=1000-2999"), (pack, "bytes=-100"),
            (pack, nil),
        ] {
            let headers = range.map { ["Range": $0] } ?? [:]
            let a = try Curl.run(nginxBase + path, headers: headers)
            let b = try Curl.run(ours.baseURL + path, headers: headers)
            #expect(a.status == b.status && a.body == b.body, "\(path) \(range ?? "")")
            #expect(a.headers["content-range"] == b.headers["content-range"])
        }
    }
}
