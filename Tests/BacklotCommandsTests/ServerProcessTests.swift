import BacklotBasics
import BacklotCommands
import BacklotCrypto
import BacklotFormat
import BacklotHTTPClient
import BacklotJSON
import BacklotProtocol
import BacklotRepository
import BacklotStore
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
            // The first line it prints names its address; it has 60 s to print it.
            let text: String
            do {
                text = try Wait.output(of: output.fileHandleForReading, "backlot serve prints its address") {
                    $0.contains("\n")
                }
            } catch {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
                throw BacklotError(.io, "\(error); standard error ends with: \(Self.tail(errorPath))")
            }
            guard let line = text.split(separator: "\n").first, let at = line.range(of: " at ") else {
                process.waitUntilExit()  // it closed its output: it has ended, or is ending
                throw BacklotError(
                    .io, "backlot serve printed no address: \(text); standard error ends with: \(Self.tail(errorPath))")
            }
            baseURL = String(line[at.upperBound...])
        }

        /// The end of what the server wrote to standard error so far.
        var standardError: String { Self.tail(errorPath) }

        static func tail(_ path: String) -> String {
            String(((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").suffix(4000))
        }

        /// Waits (60 s at most) until the process has ended by itself.
        func waitForEnd(_ why: String) throws {
            try Wait.untilExit(of: process, "backlot serve ends (\(why))", timeout: .seconds(60))
        }

        /// Whether it was ended by SIGKILL.
        var killedBySIGKILL: Bool {
            !process.isRunning && process.terminationReason == .uncaughtSignal && process.terminationStatus == SIGKILL
        }

        func kill9() {
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
        }

        /// SIGTERM, then its exit status once it has stopped; -1 when it did not stop within 60 s
        /// (it is then killed).
        func terminate() -> Int32 {
            // Never a signal to a process already reaped: its ID may be another's by now.
            guard process.isRunning else { return process.terminationStatus }
            kill(process.processIdentifier, SIGTERM)
            guard (try? Wait.untilExit(of: process, "backlot serve stops on SIGTERM", timeout: .seconds(60))) != nil
            else { return -1 }
            return process.terminationStatus
        }

        /// How the process ended and the end of what it wrote to standard error (once it has ended).
        var ending: String {
            let how =
                process.terminationReason == .uncaughtSignal
                ? "killed by signal \(process.terminationStatus)" : "exit status \(process.terminationStatus)"
            return how + "; standard error ends with:\n" + standardError
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
        try Wait.until(
            "the upload that never began is removed (version 1 answers 404)", timeout: .seconds(30),
            poll: .milliseconds(100), detail: { "status \(status)" }
        ) {
            status = try api(server, token, "GET", "/api/apps/a/packs/Levels/versions/1").status
            return status != 200
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
        do {
            try Wait.until(
                "the server has stored some bytes of the upload", timeout: .seconds(30), poll: .milliseconds(25)
            ) {
                arrived = try received(server, token, version: 1)
                return arrived > 0
            }
        } catch {
            server.kill9()
            kill(curl.processIdentifier, SIGKILL)
            curl.waitUntilExit()
            throw error
        }
        server.kill9()
        try Wait.untilExit(of: curl, "curl ends once its server is gone", timeout: .seconds(30))
        #expect(server.killedBySIGKILL, "\(server.ending)")
        #expect(curl.terminationStatus != 0, "curl finished the upload: the kill came after it")
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
        #expect(try processed(server, token, version: 1) == "COMPLETE")
    }

    /// Releases version `version` of Levels on internal through the API of the server at `url`.
    func releaseRequest(_ url: String, _ token: String, version: Int) throws -> HTTPClient.Response {
        try HTTPClient(stallTimeout: 20).send(
            "POST", url + "api/apps/a/releases",
            headers: ["Authorization": "Bearer \(token)", "Content-Type": "application/json"],
            body: .bytes(Array("{\"pack\":\"Levels\",\"version\":\(version),\"channel\":\"internal\"}".utf8)))
    }

    /// Waits (60 s at most) until version `version` of Levels is processed, and returns its state.
    func processed(_ server: Server, _ token: String, version: Int) throws -> String {
        var state = ""
        return try Wait.value(
            "Levels version \(version) is COMPLETE or FAILED", timeout: .seconds(60), poll: .milliseconds(25),
            detail: { "state \(state)" }
        ) {
            let r = try api(server, token, "GET", "/api/apps/a/packs/Levels/versions/\(version)")
            state = try JSONReader(source: "r").read(r.body).root["state"]?.stringValue ?? ""
            return state == "COMPLETE" || state == "FAILED" ? state : nil
        }
    }

    /// Releases cut by kill -9: at the stop points of a release (its transaction committed, and its
    /// publication before and after the catalog is written), and at a moment drawn from the seed
    /// while releases follow one another. Every release before the kill succeeds, the one the kill
    /// cuts gets no answer, the catalog on disk always verifies, and the restart republishes what
    /// the database committed.
    @Test func killedDuringReleasesTheCatalogAlwaysVerifies() throws {
        var g = SeededGenerator.fromEnvironment()
        print("killedDuringReleasesTheCatalogAlwaysVerifies seed: \(g.seed) (BACKLOT_TEST_SEED replays it)")
        let dir = try TemporaryDirectory("kill-release")
        defer { dir.remove() }
        // The first server stops at a point of the first publication: nothing is published before
        // (serve republishes every channel with a release at its start, which would reach it too).
        let first = g.next() % 2 == 0 ? "publish.beforeCatalog" : "publish.afterCatalog"
        var server = try Server(data: dir.at("data"), environment: ["BACKLOT_TEST_STOP_AT": first + ":KILL"])
        defer { _ = server.terminate() }
        let token = try String(contentsOfFile: dir.at("data/admin-token"), encoding: .utf8).trimmingCharacters(
            in: .whitespacesAndNewlines)
        #expect(try api(server, token, "POST", "/api/apps", json: #"{"id":"a"}"#).status == 201)
        #expect(try api(server, token, "POST", "/api/apps/a/packs", json: #"{"id":"Levels"}"#).status == 201)
        for (number, seed) in [(1, UInt64(1)), (2, UInt64(2))] {
            let path = try archive(in: dir, seed: seed)
            let size = try FileDescriptor.openForReading(path).size()
            let created = try api(
                server, token, "POST", "/api/apps/a/packs/Levels/versions", json: "{\"size\":\(size)}")
            #expect(created.status == 201, "\(created.text)")
            let put = try HTTPClient().send(
                "PUT", server.baseURL + "api/apps/a/packs/Levels/versions/\(number)/archive",
                headers: ["Authorization": "Bearer \(token)"], body: .file(path: path, offset: 0, length: size))
            #expect(put.status == 202, "\(put.text)")
        }
        for number in [1, 2] { #expect(try processed(server, token, version: number) == "COMPLETE") }
        let pinned = try PublicKeyFile.read(path: dir.at("data/root.pub"))
        let catalogPath = dir.at("data/public/v1/apps/a/internal/catalog.json")
        func catalogOnDisk(_ source: String, newerThan: UInt64) throws -> Catalog {
            let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: catalogPath)))
            return try Catalog.verify(
                bytes, trusting: [pinned], app: "a", channel: .internal, now: Date(), newerThan: newerThan,
                source: source)
        }
        func release(_ version: Int) throws -> HTTPClient.Response {
            try releaseRequest(server.baseURL, token, version: version)
        }
        /// A release the server dies in: no answer, and the server ended by SIGKILL at `point`.
        func releaseCutAt(_ point: String, version: Int, _ label: String) throws {
            #expect(throws: BacklotError.self, "\(label): the release the kill cuts gets no answer") {
                _ = try release(version)
            }
            try server.waitForEnd("killed at \(point)")
            #expect(server.killedBySIGKILL, "\(label): \(server.ending)")
            #expect(server.standardError.contains("stop point \(point) reached"), "\(label): \(server.ending)")
        }

        /// What the database has live on internal (the version number).
        func liveInDatabase() throws -> Int? {
            let db = try Database(path: dir.at("data/meta.sqlite"))
            return try db.read { try $0.query("SELECT live FROM channel_packs WHERE channel = 'internal'") }.first?[
                "live"]?.int.map(Int.init)
        }
        /// Starts the server again and checks what it republished: newer than `lastVersion`, valid,
        /// naming what the database committed.
        func restart(_ label: String, stopAt: String = "", newerThan lastVersion: UInt64) throws -> Catalog {
            server = try Server(data: dir.at("data"), environment: ["BACKLOT_TEST_STOP_AT": stopAt])
            let republished = try catalogOnDisk(label, newerThan: lastVersion + 1)
            #expect(republished.packs.map(\.release.version) == [try liveInDatabase()], "\(label)")
            return republished
        }

        // Round 0: the first publication cut before or after its catalog is written.
        var lastVersion: UInt64 = 0
        try releaseCutAt(first, version: 1, "round 0 (\(first))")
        if first == "publish.beforeCatalog" {
            #expect(!FileSystem.exists(catalogPath), "nothing was published before the kill")
        } else {
            let written = try catalogOnDisk("the catalog written before the kill", newerThan: 0)
            #expect(written.packs.map(\.release.version) == [1])
            lastVersion = written.version
        }
        #expect(try liveInDatabase() == 1, "the release was committed before its publication")

        // Round 1: killed once a release is committed, before anything is published for it.
        lastVersion = try restart("restart 1", stopAt: "release.committed:KILL", newerThan: lastVersion).version
        try releaseCutAt("release.committed", version: 2, "round 1")
        let kept = try catalogOnDisk("round 1's catalog", newerThan: lastVersion)
        #expect(
            kept.version == lastVersion && kept.packs.map(\.release.version) == [1],
            "nothing published after the commit")
        #expect(try liveInDatabase() == 2)

        // Round 2: releases back and forth from a thread, every one checked, and kill -9 at a
        // moment drawn from the seed once some have succeeded.
        lastVersion = try restart("restart 2", newerThan: lastVersion).version
        let outcomes = Mutex<[String]>([])
        let succeeded = Atomic<Int>(0)
        let finished = Atomic<Bool>(false)
        let url = server.baseURL
        let worker = Thread {
            defer { finished.store(true, ordering: .releasing) }
            var version = 2
            while true {
                version = version % 2 + 1
                do {
                    let r = try releaseRequest(url, token, version: version)
                    outcomes.withLock { $0.append("\(r.status)") }
                    guard r.status == 200 else { return }
                    succeeded.add(1, ordering: .relaxed)
                } catch {
                    outcomes.withLock { $0.append("no answer: \(error)") }
                    return
                }
            }
        }
        worker.start()
        do {
            try Wait.until("a release succeeds", timeout: .seconds(30), detail: { "\(outcomes.withLock { $0 })" }) {
                succeeded.load(ordering: .relaxed) > 0 || finished.load(ordering: .acquiring)
            }
            usleep(useconds_t(g.next() % 200_000))
        } catch {
            server.kill9()
            throw error
        }
        server.kill9()
        try Wait.until("the releasing thread stops at the kill", timeout: .seconds(30)) {
            finished.load(ordering: .acquiring)
        }
        let seen = outcomes.withLock { $0 }
        #expect(server.killedBySIGKILL, "round 2: \(server.ending)")
        #expect(succeeded.load(ordering: .relaxed) > 0, "round 2: no release succeeded before the kill: \(seen)")
        // Every release answered 200 until the kill; the one it cut (or the next) got no answer.
        #expect(seen.dropLast().allSatisfy { $0 == "200" }, "round 2: \(seen)")
        #expect(seen.last?.hasPrefix("no answer: ") == true, "round 2: \(seen)")
        let onDisk = try catalogOnDisk("round 2", newerThan: lastVersion)
        #expect(onDisk.packs.count == 1, "round 2")
        lastVersion = try restart("restart 3", newerThan: onDisk.version).version
        #expect(server.terminate() == 0, "\(server.ending)")
    }
}
