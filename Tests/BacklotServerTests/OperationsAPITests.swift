import BacklotBasics
import BacklotHTTPServer
import BacklotJSON
import BacklotProtocol
import BacklotRepository
import BacklotTestSupport
import Foundation
import Testing

@testable import BacklotServer

/// What operators and the dashboard read, over real HTTP: `/metrics` parsed by Prometheus's own
/// parser (`prometheus_client`) after real traffic, its token and its own listener; the audit
/// trail through the API with the caller named; download counts from the server's own responses;
/// the keys and the caller.
@Suite(.serialized) struct OperationsAPITests {
    typealias Fixture = ManagementAPITests.Fixture
    let app = "com.example.game"

    /// The package root (three folders above this file).
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    func json(_ r: Curl.Result) throws -> JSONNode { try JSONReader(source: "response").read(r.body).root }

    /// Creates the app (as the admin) and pack, uploads the sample archive through the API, and releases it on internal.
    func uploadAndRelease(_ f: Fixture, token: String) throws {
        #expect(try f.call("POST", "/api/apps", token: f.admin, json: #"{"id":"\#(app)"}"#).status == 201)
        #expect(try f.call("POST", "/api/apps/\(app)/packs", token: token, json: #"{"id":"Levels"}"#).status == 201)
        let archive = try f.packArchive()
        let size = try #require(try FileSystem.status(archive)?.size)
        let created = try f.call(
            "POST", "/api/apps/\(app)/packs/Levels/versions", token: token, json: #"{"size":\#(size)}"#)
        #expect(created.status == 201)
        let put = try f.call("PUT", "/api/apps/\(app)/packs/Levels/versions/1/archive", token: token, file: archive)
        #expect(put.status == 202, "\(put.text)")
        #expect(try f.waitUntilProcessed(app, "Levels", 1)["state"]?.stringValue == "COMPLETE")
        let released = try f.call(
            "POST", "/api/apps/\(app)/releases", token: token,
            json: #"{"pack":"Levels","version":1,"channel":"internal"}"#)
        #expect(released.status == 200, "\(released.text)")
    }

    /// The samples of every family, as prometheus_client's text parser reads them: `name{labels} value` per line.
    func parsed(
        _ text: String, in dir: TemporaryDirectory
    ) throws -> [String: [(labels: [String: String], value: Double)]] {
        let python = Self.root + "/.build/venv/bin/python3"
        guard FileManager.default.isExecutableFile(atPath: python) else {
            Issue.record("no \(python): run scripts/bootstrap (it installs prometheus_client into .build/venv)")
            return [:]
        }
        let file = dir.at("metrics.txt")
        try Data(text.utf8).write(to: URL(fileURLWithPath: file))
        let script = """
            import json, sys
            from prometheus_client.parser import text_string_to_metric_families
            out = {}
            for family in text_string_to_metric_families(open(sys.argv[1]).read()):
                for s in family.samples:
                    out.setdefault(s.name, []).append([s.labels, s.value])
                out.setdefault("#type " + family.name, []).append([{"type": family.type}, 0])
            print(json.dumps(out))
            """
        let outcome = try ChildProcess.run(
            executable: python, arguments: ["-c", script, file], environment: [:], until: .now + .seconds(60))
        let output = String(decoding: outcome.output, as: UTF8.self)
        try #require(outcome.exitStatus == 0, "prometheus_client refused the exposition: \(output)")
        let root = try JSONReader(source: "parsed").read(output).root
        var families: [String: [(labels: [String: String], value: Double)]] = [:]
        for member in root.objectMembers ?? [] {
            families[member.key] = (member.value.arrayElements ?? []).map { sample in
                let pair = sample.arrayElements ?? []
                var labels: [String: String] = [:]
                for l in pair.first?.objectMembers ?? [] { labels[l.key] = l.value.stringValue ?? "" }
                let value = pair.count > 1 ? pair[1].numberText.flatMap(Double.init) ?? .nan : .nan
                return (labels, value)
            }
        }
        return families
    }

    @Test func metricsParseWithPrometheusClientAndHaveEveryFamilyAfterRealTraffic() throws {
        let f = try Fixture()
        try uploadAndRelease(f, token: f.admin)
        try f.repository.publication.resign(margin: .infinity)
        let catalogPath = "v1/apps/\(app)/internal/catalog.json"
        #expect(try Curl.run(f.server.baseURL + catalogPath).status == 200)
        let sha = try #require(try f.repository.uploads.version(app: app, pack: "Levels", number: 1).archiveSHA256)
        let range = try Curl.run(f.server.baseURL + "v1/packs/\(sha).pack", headers: ["Range": "bytes=0-99"])
        #expect(range.status == 206 && range.body.count == 100)
        #expect(try Curl.run(f.server.baseURL + "v1/keys/root.json").status == 200)
        #expect(try Curl.run(f.server.baseURL + "v1/nothing").status == 404)
        // The next key list, asked for by every check: a miss by design, not an error.
        #expect(try Curl.run(f.server.baseURL + "v1/keys/root-2.json").status == 404)
        #expect(try Curl.run(f.server.baseURL + "v1/keys/root-3.json").status == 404)
        let scraped = try Curl.run(f.server.baseURL + "metrics")
        #expect(
            scraped.status == 200 && scraped.headers["content-type"]?.hasPrefix("text/plain; version=0.0.4") == true)
        let m = try parsed(scraped.text, in: f.dir)
        func value(_ name: String, _ labels: [String: String] = [:]) -> Double? {
            m[name]?.first { s in labels.allSatisfy { s.labels[$0.key] == $0.value } }?.value
        }
        func type(_ family: String) -> String? { m["#type " + family]?.first?.labels["type"] }
        #expect(
            value("backlot_requests_by_class_total", ["class": "catalog", "status": "200"]).map { $0 >= 1 } == true)
        #expect(value("backlot_requests_by_class_total", ["class": "pack", "status": "206"]) == 1)
        #expect(
            value("backlot_requests_by_class_total", ["class": "keyList", "status": "200"]).map { $0 >= 1 } == true)
        #expect(value("backlot_requests_by_class_total", ["class": "api", "status": "201"]).map { $0 >= 3 } == true)
        #expect(value("backlot_requests_by_class_total", ["class": "other", "status": "404"]) == 1)
        #expect(value("backlot_requests_by_class_total", ["class": "keyList", "status": "404"]) == 2)
        #expect(value("backlot_expected_misses_total", ["class": "keyList"]) == 2)
        #expect(value("backlot_http_errors_total", ["class": "keyList"]) == 0, "the key-list misses are not errors")
        #expect(value("backlot_http_errors_total", ["class": "other"]) == 1, "a path of no kind is one")
        #expect(type("backlot_request_duration_seconds") == "histogram")
        let catalogCount = value("backlot_request_duration_seconds_count", ["class": "catalog"]) ?? 0
        #expect(catalogCount >= 1)
        #expect(value("backlot_request_duration_seconds_bucket", ["class": "catalog", "le": "+Inf"]) == catalogCount)
        #expect(value("backlot_request_duration_seconds_sum", ["class": "pack"]).map { $0 > 0 } == true)
        #expect(value("backlot_response_bytes_by_class_total", ["class": "pack"]) == 100)
        #expect(value("backlot_http_response_bytes_total").map { $0 > 100 } == true)
        #expect(value("backlot_http_requests_in_flight").map { $0 >= 1 } == true, "the scrape itself is in flight")
        #expect(value("backlot_uploads_total", ["outcome": "completed"]) == 1)
        #expect(value("backlot_processing_total", ["outcome": "complete"]) == 1)
        #expect(type("backlot_processing_duration_seconds") == "histogram")
        #expect(value("backlot_processing_duration_seconds_count") == 1)
        #expect(value("backlot_processing_duration_seconds_bucket", ["le": "+Inf"]) == 1)
        let expiry = try #require(value("backlot_catalog_expiry_seconds"))
        #expect(expiry > 0 && expiry <= Catalog.defaultLifetime)
        let resigned = try #require(value("backlot_last_resign_timestamp_seconds"))
        #expect(abs(resigned - Date().timeIntervalSince1970) < 3600)
        #expect(value("backlot_build_info", ["version": "unknown"]) == 1)
        for family in [
            "backlot_http_requests_total", "backlot_requests_by_class_total", "backlot_uploads_total",
            "backlot_processing_total",
        ] {
            // prometheus_client names a counter's family without its _total suffix.
            #expect(type(String(family.dropLast(6))) == "counter", "\(family)")
        }
        for family in [
            "backlot_http_requests_in_flight", "backlot_catalog_expiry_seconds",
            "backlot_last_resign_timestamp_seconds", "backlot_build_info",
        ] {
            #expect(type(family) == "gauge", "\(family)")
        }
    }

    @Test func metricsNeedTheirTokenAndMoveToTheirOwnListener() throws {
        let dir = try TemporaryDirectory("metrics-access")
        defer { dir.remove() }
        let repository = try Repository(directory: RepositoryDirectory(path: dir.at("data")))
        let guarded = try HostingServer(
            repository: repository, configuration: .init(port: 0),
            metricsAccess: MetricsAccess(token: "metrics-secret"), version: "9.9.9")
        defer { guarded.stop(grace: 0) }
        let refused = try Curl.run(guarded.baseURL + "metrics")
        #expect(refused.status == 401 && refused.headers["www-authenticate"] == "Bearer")
        #expect(try Curl.run(guarded.baseURL + "metrics", headers: ["Authorization": "Bearer wrong"]).status == 401)
        let allowed = try Curl.run(guarded.baseURL + "metrics", headers: ["Authorization": "Bearer metrics-secret"])
        #expect(allowed.status == 200 && allowed.text.contains("backlot_build_info{version=\"9.9.9\"} 1"))
        #expect(try Curl.run(guarded.baseURL + "v1/keys/root.json").status == 200, "the tree stays open")

        let other = try Repository(directory: RepositoryDirectory(path: dir.at("other")))
        let split = try HostingServer(
            repository: other, configuration: .init(port: 0),
            metricsAccess: MetricsAccess(listening: try ListeningSocket(host: "127.0.0.1", port: 0)))
        defer { split.stop(grace: 0) }
        let url = try #require(split.metricsURL)
        #expect(try Curl.run(split.baseURL + "metrics").status == 404, "not on the main listener")
        let scraped = try Curl.run(url)
        #expect(scraped.status == 200 && scraped.text.contains("# TYPE backlot_build_info gauge"))
        #expect(try Curl.run(url.replacingOccurrences(of: "/metrics", with: "/v1/keys/root.json")).status == 404)
        #expect(try Curl.run(url, method: "POST").status == 405)
    }

    @Test func theAuditTrailNamesTheCallerAndPagesThroughTheAPI() throws {
        let f = try Fixture()
        let uploader = try f.repository.tokens.issue(role: .uploader, label: "CI")
        let reader = try f.repository.tokens.create(role: .reader, label: "wall screen")
        try uploadAndRelease(f, token: uploader.token)
        let r = try f.call("GET", "/api/audit?app=\(app)&limit=3", token: reader)
        #expect(r.status == 200, "\(r.text)")
        let page = try json(r)
        let entries = page["entries"]?.arrayElements ?? []
        #expect(
            entries.compactMap { $0["action"]?.stringValue } == [
                "release.request", "version.processed", "version.uploaded",
            ])
        #expect(entries.first?["actor"]?["label"]?.stringValue == "CI")
        #expect(entries.first?["actor"]?["role"]?.stringValue == "uploader")
        #expect(entries.first?["actor"]?["tokenId"]?.numberText == String(uploader.id))
        #expect(entries.dropFirst().first?["actor"]?["role"]?.stringValue == "system")
        #expect(entries.dropFirst().first?["actor"]?["label"]?.stringValue == "server")
        let next = try #require(page["next"]?.numberText)
        let rest = try json(try f.call("GET", "/api/audit?app=\(app)&before=\(next)", token: reader))
        #expect(
            (rest["entries"]?.arrayElements ?? []).compactMap { $0["action"]?.stringValue } == [
                "version.create", "pack.create", "app.create",
            ])
        #expect(rest["next"]?.kind == .null)
        let filtered = try json(try f.call("GET", "/api/audit?action=app.create", token: reader))
        #expect(filtered["entries"]?.arrayElements?.count == 1)
        for bad in ["limit=0", "limit=501", "limit=x", "before=0", "action=app.explode", "app=..bad"] {
            let refused = try f.call("GET", "/api/audit?\(bad)", token: reader)
            #expect(refused.status == 400 && refused.text.contains("\"error\""), "\(bad): \(refused.status)")
        }
        #expect(try f.call("GET", "/api/audit").status == 401)
        // A refused change writes nothing.
        let before = try f.repository.audit.entries().entries.count
        #expect(try f.call("POST", "/api/apps", token: f.admin, json: #"{"id":"\#(app)"}"#).status == 409)
        #expect(try f.call("POST", "/api/apps", token: reader, json: #"{"id":"b"}"#).status == 403)
        #expect(try f.repository.audit.entries().entries.count == before)
    }

    @Test func downloadsAreCountedFromTheTreesOwnResponses() throws {
        let f = try Fixture()
        try uploadAndRelease(f, token: f.admin)
        let sha = try #require(try f.repository.uploads.version(app: app, pack: "Levels", number: 1).archiveSHA256)
        for _ in 0..<3 {
            #expect(try Curl.run(f.server.baseURL + "v1/apps/\(app)/internal/catalog.json").status == 200)
        }
        #expect(
            try Curl.run(f.server.baseURL + "v1/packs/\(sha).pack", headers: ["Range": "bytes=10-19"]).status == 206)
        #expect(try Curl.run(f.server.baseURL + "v1/packs/\(sha).pack", headers: ["Range": "bytes=0-9"]).status == 206)
        #expect(try Curl.run(f.server.baseURL + "v1/apps/\(app)/internal/nothing.json").status == 404)
        f.server.downloads.flush()
        let r = try f.call("GET", "/api/apps/\(app)/downloads?days=7", token: f.admin)
        #expect(r.status == 200, "\(r.text)")
        let body = try json(r)
        #expect(body["to"]?.stringValue == DownloadCounts.utcDay(Date()))
        let rows = (body["rows"]?.arrayElements ?? []).map {
            "\($0["kind"]?.stringValue ?? "?") \($0["pack"]?.stringValue ?? "-") \($0["version"]?.numberText ?? "-") \($0["requests"]?.numberText ?? "?") \($0["bytes"]?.numberText ?? "?")"
        }
        let catalogBytes = try #require(
            try f.repository.tree.read("v1/apps/\(app)/internal/catalog.json", atMost: 1 << 20)
        ).count
        #expect(rows == ["catalog - - 3 \(3 * catalogBytes)", "pack Levels 1 2 20"])
        #expect(try f.call("GET", "/api/apps/\(app)/downloads?days=91", token: f.admin).status == 400)
        #expect(try f.call("GET", "/api/apps/com.example.none/downloads", token: f.admin).status == 404)
    }

    @Test func keysAndWhoAmI() throws {
        let f = try Fixture()
        try uploadAndRelease(f, token: f.admin)
        let reviewer = try f.repository.tokens.issue(role: .reviewer, label: "rm", expiresIn: 3600)
        let me = try json(try f.call("GET", "/api/whoami", token: reviewer.token))
        #expect(me["tokenId"]?.numberText == String(reviewer.id) && me["role"]?.stringValue == "reviewer")
        #expect(me["label"]?.stringValue == "rm" && me["expires"]?.stringValue != nil)
        #expect(try f.call("GET", "/api/whoami").status == 401)
        let first = try json(try f.call("GET", "/api/keys", token: reviewer.token))
        let oldKey = try #require(first["current"]?["keyId"]?.stringValue)
        #expect(first["history"]?.arrayElements?.count == 1)
        #expect(first["catalogs"]?.arrayElements?.first?["channel"]?.stringValue == "internal")
        try Caller.$current.withValue(nil) { _ = try f.repository.publication.rotateKey() }
        let second = try json(try f.call("GET", "/api/keys", token: reviewer.token))
        let history = second["history"]?.arrayElements ?? []
        #expect(history.count == 2)
        #expect(second["current"]?["keyId"]?.stringValue == history.first?["keyId"]?.stringValue)
        #expect(history.first?["retired"]?.kind == .null)
        #expect(history.last?["keyId"]?.stringValue == oldKey && history.last?["retired"]?.stringValue != nil)
    }
}

extension JSONNode {
    /// A number as written, or nil.
    fileprivate var numberText: String? { if case .number(let text) = kind { text } else { nil } }
}
