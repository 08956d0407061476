import BacklotBasics
import BacklotRepository
import BacklotTestSupport
import Foundation
import Testing

@testable import BacklotServer

/// The dashboard's HTTP side against a real `HostingServer`, with curl as the client: what it
/// serves, with which headers, and what it refuses. (The page itself is driven in Chromium by
/// scripts/dashboard-test.)
@Suite(.serialized) struct DashboardTests {
    /// A server on a fresh repository; the caller stops it and removes the folder.
    func server() throws -> (TemporaryDirectory, HostingServer) {
        let dir = try TemporaryDirectory("dashboard")
        let repo = try Repository(directory: RepositoryDirectory(path: dir.at("data")))
        return (dir, try HostingServer(repository: repo, configuration: .init(port: 0)))
    }

    /// The dashboard's files as kept in the source tree.
    static let sourceFolder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Sources/BacklotServer/Dashboard")

    func expectSecurityHeaders(_ r: Curl.Result, _ what: String) {
        let csp = r.headers["content-security-policy"] ?? ""
        #expect(csp.contains("default-src 'self'"), "\(what): \(csp)")
        #expect(csp.contains("script-src 'self'") && csp.contains("style-src 'self'"), "\(what): \(csp)")
        #expect(csp.contains("frame-ancestors 'none'"), "\(what): \(csp)")
        #expect(!csp.contains("unsafe-inline") && !csp.contains("unsafe-eval"), "\(what): \(csp)")
        #expect(r.headers["x-content-type-options"] == "nosniff", "\(what)")
        #expect(r.headers["referrer-policy"] == "no-referrer", "\(what)")
        #expect(r.headers["x-frame-options"] == "DENY", "\(what)")
    }

    @Test func servesEachFileWithItsTypeETagAndSecurityHeaders() throws {
        let (dir, server) = try server()
        defer {
            server.stop()
            dir.remove()
        }
        let base = server.baseURL + "dashboard"

        let redirect = try Curl.run(base)
        #expect(redirect.status == 308 && redirect.headers["location"] == "/dashboard/")
        expectSecurityHeaders(redirect, "/dashboard")

        let index = try Curl.run(base + "/")
        #expect(index.status == 200)
        #expect(index.headers["content-type"] == "text/html; charset=utf-8")
        #expect(index.headers["cache-control"] == "no-cache")
        #expect(index.body == Array(try Data(contentsOf: Self.sourceFolder.appendingPathComponent("index.html"))))
        expectSecurityHeaders(index, "/dashboard/")

        let types = [
            "index.html": "text/html; charset=utf-8", "dashboard.js": "text/javascript; charset=utf-8",
            "dashboard.css": "text/css; charset=utf-8",
        ]
        for (name, type) in types {
            let r = try Curl.run(base + "/" + name)
            #expect(r.status == 200, "\(name)")
            #expect(r.headers["content-type"] == type, "\(name)")
            expectSecurityHeaders(r, name)
            let etag = try #require(r.headers["etag"], "\(name)")
            #expect(etag.hasPrefix("\"") && etag.count == 66, "\(name): \(etag)")
            let again = try Curl.run(base + "/" + name, headers: ["If-None-Match": etag])
            #expect(again.status == 304 && again.body.isEmpty, "\(name)")
            #expect(again.headers["etag"] == etag, "\(name)")
            let stale = try Curl.run(base + "/" + name, headers: ["If-None-Match": "\"0\""])
            #expect(stale.status == 200 && stale.body == r.body, "\(name)")
            let head = try Curl.run(base + "/" + name, method: "HEAD")
            #expect(head.status == 200 && head.headers["content-length"] == String(r.body.count), "\(name)")
        }
    }

    @Test func refusesUnknownFilesOtherMethodsAndPathsThatLeaveTheFolder() throws {
        let (dir, server) = try server()
        defer {
            server.stop()
            dir.remove()
        }
        let base = server.baseURL + "dashboard/"
        let adminToken = try String(contentsOfFile: dir.at("data/admin-token"), encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let unknown = [
            "nope.js", "Dashboard.js", "index.html/", "sub/index.html", ".hidden", "../dashboard/index.html",
            "%2e%2e/%2e%2e/admin-token", "..%2fadmin-token", "%2E%2E/api/apps", "../../admin-token",
            "..%5cindex.html", "index.html%00", "./index.html",
        ]
        for path in unknown {
            let r = try Curl.run(base + path, pathAsIs: true)
            #expect(r.status == 404 || r.status == 400, "\(path): \(r.status)")
            #expect(!r.text.contains(adminToken), "\(path)")
            #expect(!r.text.contains("<html"), "\(path)")
            if r.status == 404 && r.headers["content-type"] == "application/json" {
                expectSecurityHeaders(r, path)
            }
        }
        for method in ["POST", "PUT", "DELETE"] {
            let r = try Curl.run(base, method: method)
            #expect(r.status == 405 && r.headers["allow"] == "GET, HEAD", "\(method)")
            expectSecurityHeaders(r, method)
        }
        // A path that only starts like the dashboard's is not the dashboard's: the published tree's policy.
        #expect(
            try Curl.run(server.baseURL + "dashboards").headers["content-security-policy"]
                == "default-src 'none'; sandbox")
    }

    @Test func servedHTMLHoldsNoInlineScriptOrStyle() throws {
        let html = DashboardAsset.all.values.filter { $0.name.hasSuffix(".html") }
        #expect(!html.isEmpty)
        for asset in html {
            let text = String(decoding: asset.bytes, as: UTF8.self)
            let lower = text.lowercased()
            // Every <script> loads a file and has no content.
            var rest = lower[...]
            while let open = rest.range(of: "<script") {
                let tagEnd = try #require(rest[open.upperBound...].firstIndex(of: ">"), "\(asset.name)")
                let tag = rest[open.lowerBound...tagEnd]
                #expect(tag.contains(" src=\""), "\(asset.name): \(tag)")
                let after = rest[rest.index(after: tagEnd)...]
                #expect(after.hasPrefix("</script>"), "\(asset.name): a <script> with content")
                rest = after
            }
            #expect(!lower.contains("<style"), "\(asset.name)")
            #expect(!lower.contains(" style="), "\(asset.name)")
            #expect(!lower.contains("javascript:"), "\(asset.name)")
            #expect(lower.range(of: #"\son[a-z]+\s*="#, options: .regularExpression) == nil, "\(asset.name)")
            // Nothing from another origin.
            #expect(!lower.contains("http://") && !lower.contains("https://"), "\(asset.name)")
        }
        // The script builds no markup from strings and loads nothing from elsewhere.
        let script = String(decoding: try #require(DashboardAsset.named("dashboard.js")).bytes, as: UTF8.self)
        for pattern in ["innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"] {
            #expect(!script.contains(pattern), "dashboard.js uses \(pattern)")
        }
        #expect(!script.contains("localStorage") && !script.contains("document.cookie"))
    }

    @Test func embeddedFilesAreTheSourceFiles() throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: Self.sourceFolder.path).sorted()
        #expect(
            names == DashboardAsset.embedded.map(\.name).sorted(),
            "every file of Sources/BacklotServer/Dashboard/ is named in DashboardAsset.embedded")
        for name in names {
            let bytes = Array(try Data(contentsOf: Self.sourceFolder.appendingPathComponent(name)))
            let same = DashboardAsset.named(name)?.bytes == bytes
            #expect(same, "\(name) differs from its embedded copy (a stale build?)")
        }
    }
}
