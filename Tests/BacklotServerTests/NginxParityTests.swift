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
    static func freePort() -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_addr.s_addr = inet_addr("127.0.0.1")
        _ = withUnsafePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
        return UInt16(bigEndian: a.sin_port)
    }

    @Test func nginxWithABareRootServesTheSameBytes() throws {
        let dir = try TemporaryDirectory("nginx")
        defer { dir.remove() }
        chmod(dir.path, 0o755)   // nginx's workers run as an unprivileged user and must reach the tree
        let repo = try RepositoryDirectory(path: dir.at("data"))
        var g = SeededGenerator(seed: 5)
        try FileSystem.makeDirectory(repo.publicTreePath + "/v1/packs")
        try RepositoryDirectory.writePublic(bytes: g.bytes(50_000), to: repo.publicTreePath + "/v1/packs/" + String(repeating: "a", count: 64) + ".pack")

        let port = Self.freePort()
        try dir.write("nginx.conf", """
        daemon off;
        worker_processes 1;
        pid \(dir.at("nginx.pid"));
        error_log \(dir.at("error.log"));
        events { worker_connections 64; }
        http {
            access_log off;
            client_body_temp_path \(dir.at("tmp"));
            proxy_temp_path \(dir.at("tmp"));
            fastcgi_temp_path \(dir.at("tmp"));
            scgi_temp_path \(dir.at("tmp"));
            uwsgi_temp_path \(dir.at("tmp"));
            server {
                listen 127.0.0.1:\(port);
                root \(repo.publicTreePath);
            }
        }
        """)
        try FileManager.default.createDirectory(atPath: dir.at("tmp"), withIntermediateDirectories: true)
        let nginx = Process()
        nginx.executableURL = URL(fileURLWithPath: "/usr/sbin/nginx")
        nginx.arguments = ["-c", dir.at("nginx.conf"), "-p", dir.path, "-e", dir.at("error.log")]
        try nginx.run()
        defer { nginx.terminate(); nginx.waitUntilExit() }
        let ours = try HostingServer(repository: try Repository(directory: repo), configuration: .init(port: 0))
        defer { ours.stop() }

        let nginxBase = "http://127.0.0.1:\(port)/"
        var ready = false
        for _ in 0..<200 {
            if (try? Curl.run(nginxBase + "v1/keys/root.json"))?.status == 200 { ready = true; break }
            usleep(20_000)
        }
        #expect(ready, "nginx did not start: \((try? String(contentsOfFile: dir.at("error.log"), encoding: .utf8)) ?? "")")
        let pack = "v1/packs/" + String(repeating: "a", count: 64) + ".pack"
        for (path, range) in [("v1/keys/root.json", nil), ("v1/keys/root-1.json", nil), (pack, "bytes=1000-2999"), (pack, "bytes=-100"), (pack, nil)] {
            let headers = range.map { ["Range": $0] } ?? [:]
            let a = try Curl.run(nginxBase + path, headers: headers)
            let b = try Curl.run(ours.baseURL + path, headers: headers)
            #expect(a.status == b.status && a.body == b.body, "\(path) \(range ?? "")")
            #expect(a.headers["content-range"] == b.headers["content-range"])
        }
    }
}
