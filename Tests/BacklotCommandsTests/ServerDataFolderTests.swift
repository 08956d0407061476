import BacklotBasics
import BacklotHTTPClient
import BacklotJSON
import BacklotProtocol
import BacklotRepository
import BacklotTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `backlot serve`'s data folder as real processes see it: kill -9 at seeded points of a
/// channel's first release, one server per folder, nothing touched before the port is bound,
/// no temporaries in the served tree, and modes that let an unprivileged nginx serve the tree
/// while secrets stay private — whatever the umask.
@Suite(.serialized) struct ServerDataFolderTests {
    /// A `backlot serve` process with its output.
    final class Serve: @unchecked Sendable {
        let process = Process()
        let output = Pipe()
        let errors = Pipe()
        var baseURL = ""

        /// Starts `backlot serve` (through `sh` to set the umask), waiting for its address unless `expectFailure`.
        init(
            data: String, port: UInt16 = 0, environment: [String: String] = [:], umask mask: String = "022",
            expectFailure: Bool = false
        ) throws {
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = [
                "-c", "umask \(mask) && exec \"$0\" \"$@\"", ProcessTests.binary,
                "serve", "--data", data, "--port", String(port), "--tls", "off", "--quiet",
            ]
            var env = ProcessInfo.processInfo.environment
            env.removeValue(forKey: "BACKLOT_TEST_STOP_AT")
            for (k, v) in environment { env[k] = v }
            process.environment = env
            process.standardOutput = output
            process.standardError = errors
            try process.run()
            guard !expectFailure else { return }
            let text: String
            do {
                text = try Wait.output(of: output.fileHandleForReading, "backlot serve prints its address") {
                    $0.contains("\n")
                }
            } catch {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
                throw error
            }
            guard let line = text.split(separator: "\n").first, let at = line.range(of: " at ") else {
                throw BacklotError(.io, "backlot serve printed no address: \(text) \(stderrText())")
            }
            baseURL = String(line[at.upperBound...])
        }

        func stderrText() -> String {
            guard !process.isRunning else { return "" }
            return String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        }

        /// Waits for the process to end by itself; returns its status.
        func exitStatus() -> Int32 {
            process.waitUntilExit()
            return process.terminationStatus
        }

        func kill9() {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }

        func terminate() {
            kill(process.processIdentifier, SIGTERM)
            process.waitUntilExit()
        }
    }

    func api(
        _ base: String, _ token: String, _ method: String, _ path: String, json: String? = nil
    ) throws -> HTTPClient.Response {
        var headers = ["Authorization": "Bearer \(token)"]
        if json != nil { headers["Content-Type"] = "application/json" }
        return try HTTPClient(stallTimeout: 20).send(
            method, base + path.dropFirst(), headers: headers, body: json.map { .bytes(Array($0.utf8)) })
    }

    func token(_ data: String) throws -> String {
        try String(contentsOfFile: data + "/admin-token", encoding: .utf8).trimmingCharacters(
            in: .whitespacesAndNewlines)
    }

    /// App "a", pack Levels, version 1 uploaded and COMPLETE — nothing released.
    func prepare(_ server: Serve, data: String, dir: TemporaryDirectory) throws {
        let admin = try token(data)
        #expect(try api(server.baseURL, admin, "POST", "/api/apps", json: #"{"id":"a"}"#).status == 201)
        #expect(try api(server.baseURL, admin, "POST", "/api/apps/a/packs", json: #"{"id":"Levels"}"#).status == 201)
        let src = try TemporaryDirectory("src")
        defer { src.remove() }
        try SamplePack.writeTree(in: src, seed: 4)
        let path = try SamplePack.build(in: src, manifestJSON: SamplePack.manifest(id: "Levels"))
        let size = try FileDescriptor.openForReading(path).size()
        #expect(
            try api(server.baseURL, admin, "POST", "/api/apps/a/packs/Levels/versions", json: "{\"size\":\(size)}")
                .status == 201)
        let put = try HTTPClient().send(
            "PUT", server.baseURL + "api/apps/a/packs/Levels/versions/1/archive",
            headers: ["Authorization": "Bearer \(admin)"], body: .file(path: path, offset: 0, length: size))
        #expect(put.status == 202)
        let state = try Wait.value(
            "Levels 1 processed (COMPLETE or FAILED)", timeout: .seconds(60), poll: .milliseconds(25)
        ) {
            () -> String? in
            let state =
                try JSONReader(source: "v").read(
                    try api(server.baseURL, admin, "GET", "/api/apps/a/packs/Levels/versions/1").body
                ).root["state"]?.stringValue ?? ""
            return state == "COMPLETE" || state == "FAILED" ? state : nil
        }
        #expect(state == "COMPLETE")
    }

    /// Names of hidden temporaries anywhere under `folder`.
    func temporaries(under folder: String) -> [String] {
        (FileManager.default.enumerator(atPath: folder)?.allObjects as? [String] ?? []).filter {
            $0.split(separator: "/").contains { $0.hasPrefix(".") || $0.contains(".tmp-") }
        }
    }

    @Test func killedDuringAChannelsFirstReleaseTheCatalogIsPublishedAtRestart() throws {
        var g = SeededGenerator.fromEnvironment()
        print(
            "killedDuringAChannelsFirstReleaseTheCatalogIsPublishedAtRestart seed: \(g.seed) (BACKLOT_TEST_SEED replays it)"
        )
        let points = ["release.committed", "publish.beforeCatalog", "publish.afterCatalog", "delay"]
        // Every kill point once, in a seeded order, plus seeded random delays.
        var order = points.shuffled(using: &g)
        order.append(points[Int(g.next() % UInt64(points.count))])
        for point in order {
            let dir = try TemporaryDirectory("first-release")
            defer { dir.remove() }
            let data = dir.at("data")
            let environment = point == "delay" ? [:] : ["BACKLOT_TEST_STOP_AT": point]
            let server = try Serve(data: data, environment: environment)
            try prepare(server, data: data, dir: dir)
            let pinned = try PublicKeyFile.read(path: data + "/root.pub")
            let admin = try token(data)
            let catalogPath = data + "/public/v1/apps/a/internal/catalog.json"
            let base = server.baseURL
            let release = Thread {
                _ = try? self.api(
                    base, admin, "POST", "/api/apps/a/releases",
                    json: #"{"pack":"Levels","version":1,"channel":"internal"}"#)
            }
            release.start()
            if point == "delay" {
                usleep(useconds_t(g.next() % 30_000))
                server.kill9()
            } else {
                #expect(
                    server.exitStatus() != 0 && server.process.terminationReason == .uncaughtSignal,
                    "\(point): not killed at its point")
            }
            #expect(
                temporaries(under: data + "/public").isEmpty,
                "\(point): temporaries in the tree: \(temporaries(under: data + "/public"))")
            // Whatever the database says is live is published after a restart, and verifies.
            let restarted = try Serve(data: data)
            defer { restarted.terminate() }
            let catalog = try HTTPClient().send("GET", restarted.baseURL + "v1/apps/a/internal/catalog.json")
            if point == "delay" && catalog.status == 404 {
                // Killed before the release was committed: nothing is live, and a release now works.
                #expect(
                    try api(
                        restarted.baseURL, admin, "POST", "/api/apps/a/releases",
                        json: #"{"pack":"Levels","version":1,"channel":"internal"}"#
                    ).status == 200)
            }
            let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: catalogPath)))
            let verified = try Catalog.verify(
                bytes, trusting: [pinned], app: "a", channel: .internal, now: Date(), source: point)
            #expect(
                verified.packs.map(\.id.rawValue) == ["Levels"] && verified.packs.first?.release.version == 1,
                "\(point)")
            let archive = try HTTPClient().send(
                "GET", restarted.baseURL + "v1/apps/a/internal/" + (verified.packs.first?.release.archiveURL ?? ""))
            #expect(archive.status == 200, "\(point): the archive is not served")
        }
    }

    @Test func oneServerPerDataFolder() throws {
        let dir = try TemporaryDirectory("lock")
        defer { dir.remove() }
        let data = dir.at("data")
        let first = try Serve(data: data)
        defer { first.terminate() }
        let second = try Serve(data: data, expectFailure: true)
        #expect(second.exitStatus() == 1)
        let message = second.stderrText()
        #expect(
            message.contains(data) && message.contains(data + "/.lock")
                && message.contains("in use by another process"), "\(message)")
        // The first still serves; resign and rotate refuse while it runs.
        #expect(try HTTPClient().send("GET", first.baseURL + "v1/keys/root.json").status == 200)
        for args in [["catalog", "resign", "--data", data], ["keys", "rotate", "--data", data]] {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: ProcessTests.binary)
            p.arguments = args
            let err = Pipe()
            p.standardError = err
            p.standardOutput = FileHandle.nullDevice
            try p.run()
            p.waitUntilExit()
            #expect(
                p.terminationStatus == 1
                    && String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).contains(".lock"),
                "\(args)")
        }
    }

    @Test func aServerThatCannotBindTouchesNothing() throws {
        let dir = try TemporaryDirectory("bind")
        defer { dir.remove() }
        let data = dir.at("data")
        let first = try Serve(data: data)
        first.terminate()
        let catalogBefore = try Data(contentsOf: URL(fileURLWithPath: data + "/public/v1/keys/root.json"))
        var before = stat()
        stat(data + "/public/v1/keys/root.json", &before)
        // Someone else holds a port, and listens on it: the server stops before it opens, locks or re-signs anything.
        let held = try FreePort.bound()
        let holder = held.takeDescriptor()
        defer { close(holder) }
        let port = Int(held.port)
        #expect(listen(holder, 1) == 0)
        for folder in [data, dir.at("fresh")] {
            let refused = try Serve(data: folder, port: UInt16(port), expectFailure: true)
            #expect(refused.exitStatus() == 1)
            #expect(refused.stderrText().contains("could not listen on 127.0.0.1 port \(port)"))
        }
        #expect(!FileSystem.exists(dir.at("fresh")), "a new data folder was created by a server that could not listen")
        var after = stat()
        stat(data + "/public/v1/keys/root.json", &after)
        #expect(try Data(contentsOf: URL(fileURLWithPath: data + "/public/v1/keys/root.json")) == catalogBefore)
        #expect(after.st_mtim.tv_sec == before.st_mtim.tv_sec && after.st_mtim.tv_nsec == before.st_mtim.tv_nsec)
    }

    /// Numbers in the configuration go through the checked conversion: a usage error (exit 2), before anything is touched.
    @Test func anInstallSizeLimitThatDoesNotFitIsAUsageError() throws {
        let dir = try TemporaryDirectory("config")
        defer { dir.remove() }
        for value in ["18446744073709551616", "-1", "0", "1.5", "1e9", "64GiB", "9223372036854775808"] {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: ProcessTests.binary)
            p.arguments = [
                "serve", "--data", dir.at("data"), "--port", "0", "--tls", "off", "--max-install-size", value,
            ]
            let err = Pipe()
            p.standardError = err
            p.standardOutput = FileHandle.nullDevice
            try p.run()
            p.waitUntilExit()
            let text = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            #expect(
                p.terminationStatus == 2 && text.contains("--max-install-size")
                    && text.contains("must be a whole number from 1 to 9223372036854775807"), "\(value): \(text)")
        }
        #expect(!FileSystem.exists(dir.at("data")))
    }

    @Test func staleTemporariesAreRemovedAndNeverServed() throws {
        let dir = try TemporaryDirectory("stale")
        defer { dir.remove() }
        let data = dir.at("data")
        Serve.stop(try Serve(data: data))
        // What a crash of an earlier version left beside its destination, and in the staging folder.
        try dir.write("data/public/v1/keys/.root.json.tmp-AbC123", "half a key list")
        try dir.write("data/staging/tree-XyZ987", "half a catalog")
        let server = try Serve(data: data)
        defer { server.terminate() }
        #expect(try HTTPClient().send("GET", server.baseURL + "v1/keys/.root.json.tmp-AbC123").status == 404)
        #expect(
            !FileSystem.exists(data + "/public/v1/keys/.root.json.tmp-AbC123")
                && !FileSystem.exists(data + "/staging/tree-XyZ987"))
    }

    func mode(_ path: String) -> mode_t {
        var st = stat()
        guard lstat(path, &st) == 0 else { return 0o7777 }
        return st.st_mode & 0o7777
    }

    /// Published archives and every file of the tree are world-readable whatever the umask; secrets
    /// are not, and an nginx whose workers run as nobody serves the tree.
    @Test func theTreeIsWorldReadableAndSecretsArePrivateWhateverTheUmask() throws {
        let dir = try TemporaryDirectory("modes")
        defer { dir.remove() }
        chmod(dir.path, 0o755)  // the test's own folder must let nobody through to DIR
        let data = dir.at("data")
        let server = try Serve(data: data, umask: "077")
        try prepare(server, data: data, dir: dir)
        let admin = try token(data)
        #expect(
            try api(
                server.baseURL, admin, "POST", "/api/apps/a/releases",
                json: #"{"pack":"Levels","version":1,"channel":"internal"}"#
            ).status == 200)
        server.terminate()

        let tree = data + "/public"
        let entries = (FileManager.default.enumerator(atPath: tree)?.allObjects as? [String]) ?? []
        #expect(entries.contains { $0.hasSuffix(".pack") })
        #expect(mode(tree) == 0o755)
        for entry in entries {
            var st = stat()
            lstat(tree + "/" + entry, &st)
            let expected: mode_t = st.st_mode & S_IFMT == S_IFDIR ? 0o755 : 0o644
            #expect(st.st_mode & 0o7777 == expected, "public/\(entry) is \(String(st.st_mode & 0o7777, radix: 8))")
        }
        #expect(mode(data) == 0o711)
        for secret in ["admin-token", "meta.sqlite", "meta.sqlite-wal", "meta.sqlite-shm", "keys/signing.key", ".lock"]
        where FileSystem.exists(data + "/" + secret) {
            #expect(mode(data + "/" + secret) == 0o600, "\(secret) is \(String(mode(data + "/" + secret), radix: 8))")
        }
        #expect(FileSystem.exists(data + "/meta.sqlite"))
        for folder in ["keys", "tls", "uploads", "staging"] where FileSystem.exists(data + "/" + folder) {
            #expect(
                mode(data + "/" + folder) & 0o077 == 0, "\(folder) is \(String(mode(data + "/" + folder), radix: 8))")
        }

        // nginx with its workers as an unprivileged user serves every published file.
        let nginx = try Nginx(root: tree, workDirectory: dir.at("nginx"), unprivilegedWorkers: true)
        defer { nginx.stop() }
        #expect(nginx.waitUntilServing("v1/keys/root.json"), "nginx did not start: \(nginx.errorLogText)")
        for entry in entries where !entry.hasSuffix("/") {
            var st = stat()
            lstat(tree + "/" + entry, &st)
            guard st.st_mode & S_IFMT == S_IFREG else { continue }
            let r = try HTTPClient().send("GET", nginx.baseURL + entry)
            #expect(r.status == 200, "nginx (workers as \(nginx.workerUser)) answers \(r.status) for \(entry)")
        }
    }
}

extension ServerDataFolderTests.Serve {
    static func stop(_ server: ServerDataFolderTests.Serve) { server.terminate() }
}
