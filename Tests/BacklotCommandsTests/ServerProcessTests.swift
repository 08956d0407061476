import BacklotBasics
import BacklotCatalog
import BacklotCommands
import BacklotCrypto
import BacklotFormat
import BacklotHTTPClient
import BacklotJSON
import BacklotRepository
import BacklotTestSupport
import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `backlot serve` as a real process: graceful stop, and kill -9 during an upload and during
/// releases, each followed by a restart on the same data folder.
@Suite(.serialized) struct ServerProcessTests {
    /// A running `backlot serve` and the base URL it printed.
    final class Server: @unchecked Sendable {  // its state is set once, in init
        let process = Process()
        let baseURL: String
        private let output = Pipe()
        /// Where the server's standard error goes, for the message of a test that fails.
        private let errorPath =
            FileManager.default.temporaryDirectory.appendingPathComponent("backlot-serve-\(UUID().uuidString).log").path

        /// - Parameter environment: added to (or, with an empty value, removed from) this process's environment.
        init(data: String, tls: String = "off", arguments: [String]? = nil, environment: [String: String] = [:]) throws
        {
            process.executableURL = URL(fileURLWithPath: ProcessTests.binary)
            process.arguments = ["serve", "--data", data, "--port", "0", "--quiet"] + (arguments ?? ["--tls", tls])
            if !environment.isEmpty {
                var env = ProcessInfo.processInfo.environment
                for (k, v) in environment { env[k] = v.isEmpty ? nil : v }
                process.environment = env
            }
            process.standardOutput = output
            _ = FileManager.default.createFile(atPath: errorPath, contents: nil)
            process.standardError = FileHandle(forWritingAtPath: errorPath) ?? FileHandle.nullDevice
            try process.run()
            var text = ""
            let handle = output.fileHandleForReading
            while !text.contains("\n"), process.isRunning {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                text += String(decoding: chunk, as: UTF8.self)
            }
            guard let line = text.split(separator: "\n").first, let at = line.range(of: " at ") else {
                throw BacklotError(.io, "backlot serve printed no address: \(text)")
            }
            baseURL = String(line[at.upperBound...])
        }

        func kill9() {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }

        func terminate() -> Int32 {
            kill(process.processIdentifier, SIGTERM)
            process.waitUntilExit()
            return process.terminationStatus
        }

        /// How the process ended and the end of what it wrote to standard error (once it has ended).
        var ending: String {
            let how =
                process.terminationReason == .uncaughtSignal
                ? "killed by signal \(process.terminationStatus)" : "exit status \(process.terminationStatus)"
            let text = (try? String(contentsOfFile: errorPath, encoding: .utf8)) ?? ""
            return how + "; standard error ends with:\n" + text.suffix(4000)
        }

        deinit { try? FileManager.default.removeItem(atPath: errorPath) }
    }

    func api(
        _ server: Server, _ token: String, _ method: String, _ path: String, json: String? = nil
    ) throws -> HTTPClient.Response {
        var headers = ["Authorization": "Bearer \(token)"]
        if json != nil { headers["Content-Type"] = "application/json" }
        return try HTTPClient().send(
            method, server.baseURL + path.dropFirst(), headers: headers, body: json.map { .bytes(Array($0.utf8)) })
    }

    func archive(in dir: TemporaryDirectory, seed: UInt64) throws -> String {
        let src = try TemporaryDirectory("src")
        defer { src.remove() }
        try SamplePack.writeTree(in: src, seed: seed)
        let path = try SamplePack.build(in: src, manifestJSON: SamplePack.manifest(id: "Levels"))
        let kept = dir.at("levels-\(seed).pack")
        try FileManager.default.copyItem(atPath: path, toPath: kept)
        return kept
    }

    func received(_ server: Server, _ token: String, version: Int) throws -> UInt64 {
        let r = try api(server, token, "GET", "/api/apps/a/packs/Levels/versions/\(version)")
        guard case .number(let n)? = try JSONReader(source: "r").read(r.body).root["received"]?.kind else { return 0 }
        return UInt64(n) ?? 0
    }

    @Test func servesWithAGivenCertificateAndKey() throws {
        let dir = try TemporaryDirectory("own-cert")
        defer { dir.remove() }
        let ca = try LocalCertificateAuthority.create(commonName: "Test CA")
        let issued = try ca.issueServerCertificate(dnsNames: ["localhost"], ipAddresses: ["127.0.0.1"])
        try dir.write("ca.pem", ca.certificatePEM)
        try dir.write("cert.pem", issued.certificatePEM)
        try dir.write("key.pem", issued.privateKeyPEM, mode: 0o600)
        let server = try Server(data: dir.at("data"), tls: dir.at("cert.pem") + "," + dir.at("key.pem"))
        #expect(server.baseURL.hasPrefix("https://"))
        #expect(
            try HTTPClient(caFile: dir.at("ca.pem")).send("GET", server.baseURL + "v1/keys/root.json").status == 200)
        #expect(server.terminate() == 0, "\(server.ending)")
        // The same with --tls-cert and --tls-key.
        let again = try Server(
            data: dir.at("data"), arguments: ["--tls-cert", dir.at("cert.pem"), "--tls-key", dir.at("key.pem")])
        #expect(again.baseURL.hasPrefix("https://"))
        #expect(try HTTPClient(caFile: dir.at("ca.pem")).send("GET", again.baseURL + "v1/keys/root.json").status == 200)
        #expect(again.terminate() == 0, "\(again.ending)")
    }

    @Test func aTLSKeyOpenToEveryoneAndHalfAPairAreRefused() throws {
        let dir = try TemporaryDirectory("open-key")
        defer { dir.remove() }
        let ca = try LocalCertificateAuthority.create(commonName: "Test CA")
        let issued = try ca.issueServerCertificate(dnsNames: ["localhost"], ipAddresses: ["127.0.0.1"])
        try dir.write("cert.pem", issued.certificatePEM)
        try dir.write("key.pem", issued.privateKeyPEM, mode: 0o644)
        func serve(_ extra: [String]) -> (status: Int32, err: String) {
            let io = CapturedIO()
            let status = BacklotCLI.main(["serve", "--data", dir.at("data"), "--port", "0", "--quiet"] + extra, io: io)
            return (status, io.standardError)
        }
        for extra in [
            ["--tls-cert", dir.at("cert.pem"), "--tls-key", dir.at("key.pem")],
            ["--tls", dir.at("cert.pem") + "," + dir.at("key.pem")],
        ] {
            let r = serve(extra)
            #expect(
                r.status == 2 && r.err.contains("open to everyone (mode 644)") && r.err.contains("chmod 600"),
                "\(r.err)")
        }
        let half = serve(["--tls-cert", dir.at("cert.pem")])
        #expect(half.status == 2 && half.err.contains("go together"), "\(half.err)")
        let both = serve(["--tls", "off", "--tls-cert", dir.at("cert.pem"), "--tls-key", dir.at("key.pem")])
        #expect(both.status == 2 && both.err.contains("keep one"), "\(both.err)")
    }

    @Test func sigtermStopsGracefully() throws {
        let dir = try TemporaryDirectory("stop")
        defer { dir.remove() }
        let server = try Server(data: dir.at("data"))
        #expect(try HTTPClient().send("GET", server.baseURL + "v1/keys/root.json").status == 200)
        #expect(server.terminate() == 0, "\(server.ending)")
    }

    @Test func serveRemovesUploadsAbandonedForLongerThanItIsTold() throws {
        let dir = try TemporaryDirectory("abandoned-uploads")
        defer { dir.remove() }
        let server = try Server(
            data: dir.at("data"), arguments: ["--tls", "off", "--lease", "2", "--abandoned-uploads-after", "1"])
        defer { _ = server.terminate() }
        let token = try String(contentsOfFile: dir.at("data/admin-token"), encoding: .utf8).trimmingCharacters(
            in: .whitespacesAndNewlines)
        #expect(try api(server, token, "POST", "/api/apps", json: #"{"id":"a"}"#).status == 201)
        #expect(try api(server, token, "POST", "/api/apps/a/packs", json: #"{"id":"Levels"}"#).status == 201)
        #expect(
            try api(server, token, "POST", "/api/apps/a/packs/Levels/versions", json: #"{"size":1000}"#).status == 201)
        // The shared-work round runs every second with --lease 2: the version goes once it is over a second old.
        var status = 200
        for _ in 0..<300 where status == 200 {
            usleep(100_000)
            status = try api(server, token, "GET", "/api/apps/a/packs/Levels/versions/1").status
        }
        #expect(status == 404, "the upload that never began is removed")
        let help = try Process.run(
            URL(fileURLWithPath: ProcessTests.binary),
            arguments: ["serve", "--abandoned-uploads-after", "0", "--data", dir.at("x")])
        help.waitUntilExit()
        #expect(help.terminationStatus == 2, "0 seconds is refused")
    }

    @Test func killedDuringAnUploadTheUploadResumesAfterRestart() throws {
        let dir = try TemporaryDirectory("kill-upload")
        defer { dir.remove() }
        let path = try archive(in: dir, seed: 11)
        let size = try FileDescriptor.openForReading(path).size()
        var server = try Server(data: dir.at("data"))
        let token = try String(contentsOfFile: dir.at("data/admin-token"), encoding: .utf8).trimmingCharacters(
            in: .whitespacesAndNewlines)
        #expect(try api(server, token, "POST", "/api/apps", json: #"{"id":"a"}"#).status == 201)
        #expect(try api(server, token, "POST", "/api/apps/a/packs", json: #"{"id":"Levels"}"#).status == 201)
        #expect(
            try api(server, token, "POST", "/api/apps/a/packs/Levels/versions", json: "{\"size\":\(size)}").status
                == 201)

        // A slow upload (curl, rate-limited) that is cut by kill -9 once some bytes arrived.
        let curl = Process()
        curl.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        curl.arguments = [
            "-s", "-o", "/dev/null", "-X", "PUT", "--limit-rate", "64k", "-H", "Authorization: Bearer \(token)",
            "--upload-file", path, server.baseURL + "api/apps/a/packs/Levels/versions/1/archive",
        ]
        try curl.run()
        var arrived: UInt64 = 0
        for _ in 0..<400 where arrived == 0 {
            usleep(25_000)
            arrived = try received(server, token, version: 1)
        }
        server.kill9()
        curl.waitUntilExit()
        #expect(arrived > 0 && arrived < size, "the upload was not caught in flight (\(arrived) of \(size))")

        server = try Server(data: dir.at("data"))
        defer { _ = server.terminate() }
        let resumeAt = try received(server, token, version: 1)
        #expect(resumeAt >= arrived && resumeAt < size)
        let rest = try HTTPClient().send(
            "PUT", server.baseURL + "api/apps/a/packs/Levels/versions/1/archive",
            headers: ["Authorization": "Bearer \(token)", "Upload-Offset": String(resumeAt)],
            body: .file(path: path, offset: resumeAt, length: size - resumeAt))
        #expect(rest.status == 202, "\(rest.text)")
        var state = ""
        for _ in 0..<400 where state != "COMPLETE" && state != "FAILED" {
            usleep(25_000)
            let r = try api(server, token, "GET", "/api/apps/a/packs/Levels/versions/1")
            state = try JSONReader(source: "r").read(r.body).root["state"]?.stringValue ?? ""
        }
        #expect(state == "COMPLETE")
    }

    @Test func killedDuringReleasesTheCatalogAlwaysVerifies() throws {
        var g = SeededGenerator.fromEnvironment()
        print("killedDuringReleasesTheCatalogAlwaysVerifies seed: \(g.seed) (BACKLOT_TEST_SEED replays it)")
        let dir = try TemporaryDirectory("kill-release")
        defer { dir.remove() }
        var server = try Server(data: dir.at("data"))
        let token = try String(contentsOfFile: dir.at("data/admin-token"), encoding: .utf8).trimmingCharacters(
            in: .whitespacesAndNewlines)
        _ = try api(server, token, "POST", "/api/apps", json: #"{"id":"a"}"#)
        _ = try api(server, token, "POST", "/api/apps/a/packs", json: #"{"id":"Levels"}"#)
        for (number, seed) in [(1, UInt64(1)), (2, UInt64(2))] {
            let path = try archive(in: dir, seed: seed)
            let size = try FileDescriptor.openForReading(path).size()
            _ = try api(server, token, "POST", "/api/apps/a/packs/Levels/versions", json: "{\"size\":\(size)}")
            _ = try HTTPClient().send(
                "PUT", server.baseURL + "api/apps/a/packs/Levels/versions/\(number)/archive",
                headers: ["Authorization": "Bearer \(token)"], body: .file(path: path, offset: 0, length: size))
        }
        usleep(300_000)
        let pinned = try PublicKeyFile.read(path: dir.at("data/root.pub"))
        let catalogPath = dir.at("data/public/v1/apps/a/internal/catalog.json")
        var lastVersion: UInt64 = 0
        for round in 0..<3 {
            // Release back and forth from a background thread; kill -9 after a random delay.
            let url = server.baseURL
            let stop = Atomic<Bool>(false)
            let worker = Thread {
                var i = 0
                while !stop.load(ordering: .relaxed) {
                    let version = i % 2 + 1
                    _ = try? HTTPClient(stallTimeout: 2).send(
                        "POST", url + "api/apps/a/releases",
                        headers: ["Authorization": "Bearer \(token)", "Content-Type": "application/json"],
                        body: .bytes(
                            Array("{\"pack\":\"Levels\",\"version\":\(version),\"channel\":\"internal\"}".utf8)))
                    i += 1
                }
            }
            worker.start()
            usleep(useconds_t(20_000 + Int(g.next() % 200_000)))
            server.kill9()
            stop.store(true, ordering: .relaxed)
            usleep(50_000)
            if FileSystem.exists(catalogPath) {
                let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: catalogPath)))
                let catalog = try Catalog.verify(
                    bytes, trusting: [pinned], app: "a", channel: .internal, now: Date(), newerThan: lastVersion,
                    source: "round \(round)")
                lastVersion = catalog.version
            }
            server = try Server(data: dir.at("data"))
            // On restart every catalog is republished from the database, newer and valid.
            let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: catalogPath)))
            let catalog = try Catalog.verify(
                bytes, trusting: [pinned], app: "a", channel: .internal, now: Date(), newerThan: lastVersion,
                source: "restart \(round)")
            lastVersion = catalog.version
        }
        _ = server.terminate()
    }
}
