import BacklotBasics
import BacklotJSON
import BacklotTestSupport
import Foundation
import Synchronization
import Testing

@testable import BacklotRepository
@testable import BacklotServer

/// Processing under load from one app: a tiny upload that declares gigabytes is bounded by the
/// install-size limit, verifies its one chunk once, never holds another app's upload back, and
/// stops when its version is deleted. FAILED reasons name no server path.
@Suite(.serialized) struct ProcessingFairnessTests {
    /// Lines collected from callbacks.
    final class Lines: Sendable {
        private let lines = Mutex<[String]>([])
        func append(_ line: String) { lines.withLock { $0.append(line) } }
        func withLock<T>(_ body: ([String]) -> T) -> T { lines.withLock { body($0) } }
    }

    final class Fixture: @unchecked Sendable {
        let dir: TemporaryDirectory
        let repository: Repository
        let server: HostingServer
        let admin: String
        let events = Lines()
        let outcomes = Lines()

        init(maximumInstallSize: UInt64 = Repository.defaultMaximumInstallSize) throws {
            dir = try TemporaryDirectory("processing")
            repository = try Repository(
                directory: RepositoryDirectory(path: dir.at("data")), maximumInstallSize: maximumInstallSize)
            server = try HostingServer(repository: repository, configuration: .init(port: 0))
            admin = try String(contentsOfFile: repository.adminTokenPath, encoding: .utf8).trimmingCharacters(
                in: .whitespacesAndNewlines)
            repository.onEvent { [events] line in events.append(line) }
            let metrics = server.metrics
            repository.uploads.onProcessed { [outcomes] outcome in
                metrics.recordProcessing(outcome)
                outcomes.append(outcome)
            }
        }

        deinit {
            server.stop(grace: 0)
            dir.remove()
        }

        func call(_ method: String, _ path: String, json: String? = nil, file: String? = nil) throws -> Curl.Result {
            var extra: [String] = []
            var headers = ["Authorization": "Bearer \(admin)"]
            if let json {
                extra += ["--data-binary", json]
                headers["Content-Type"] = "application/json"
            }
            if let file { extra += ["--upload-file", file] }
            return try Curl.run(server.baseURL + path.dropFirst(), method: method, headers: headers, extra: extra)
        }

        /// Creates app/pack if needed and uploads `bytes` as its next version; returns the version number.
        @discardableResult
        func upload(app: String, pack: String, _ bytes: [UInt8]) throws -> Int {
            _ = try call("POST", "/api/apps", json: "{\"id\":\"\(app)\"}")
            _ = try call("POST", "/api/apps/\(app)/packs", json: "{\"id\":\"\(pack)\"}")
            let created = try call("POST", "/api/apps/\(app)/packs/\(pack)/versions", json: "{\"size\":\(bytes.count)}")
            let number = try #require(
                try JSONReader(source: "v").read(created.body).root["version"]?.integer(as: Int.self))
            let path = dir.at("\(app)-\(pack)-\(number).pack")
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            let put = try call("PUT", "/api/apps/\(app)/packs/\(pack)/versions/\(number)/archive", file: path)
            #expect(put.status == 202, "\(put.text)")
            return number
        }

        func version(_ app: String, _ pack: String, _ number: Int) throws -> JSONNode {
            try JSONReader(source: "v").read(try call("GET", "/api/apps/\(app)/packs/\(pack)/versions/\(number)").body)
                .root
        }

        func state(_ app: String, _ pack: String, _ number: Int) throws -> String {
            try version(app, pack, number)["state"]?.stringValue ?? ""
        }

        /// Polls until the version leaves PROCESSING, and returns its state; throws after 60 s.
        func waitForState(_ app: String, _ pack: String, _ number: Int) throws -> String {
            try Wait.value("\(app)/\(pack) version \(number) leaves PROCESSING", timeout: .seconds(60)) {
                let s = try state(app, pack, number)
                return s != "PROCESSING" ? s : nil
            }
        }
    }

    func smallPack(_ id: String, seed: UInt64) throws -> [UInt8] {
        let src = try TemporaryDirectory("src")
        defer { src.remove() }
        var g = SeededGenerator(seed: seed)
        try src.write("src/a.txt", g.text(30_000))
        return Array(
            try Data(
                contentsOf: URL(
                    fileURLWithPath: try SamplePack.build(in: src, manifestJSON: SamplePack.manifest(id: id)))))
    }

    @Test func aPackOverTheInstallSizeLimitFailsSayingTheLimitAndHowToRaiseIt() throws {
        let f = try Fixture(maximumInstallSize: 1 << 30)
        // 17 KB that declares 16 GiB.
        let bomb = try CraftedPack.repeatedChunk(id: "Bomb", references: 4096, correctDigest: false)
        #expect(bomb.count < 20_000)
        try f.upload(app: "a", pack: "Bomb", bomb)
        #expect(try f.waitForState("a", "Bomb", 1) == "FAILED")
        let reason = try f.version("a", "Bomb", 1)["reason"]?.stringValue ?? ""
        #expect(
            reason.contains("17179869184 bytes") && reason.contains("limit of 1073741824 bytes")
                && reason.contains("backlot serve --max-install-size"), "\(reason)")
        #expect(!reason.contains(f.dir.path) && !reason.contains("/"), "a path in \(reason)")
    }

    @Test func aChunkUsedManyTimesIsDecompressedAndHashedOnce() throws {
        let f = try Fixture()
        // 64 references: 256 MiB of file bytes from one chunk.
        let pack = try CraftedPack.repeatedChunk(id: "Repeat", references: 64, correctDigest: true)
        try f.upload(app: "a", pack: "Repeat", pack)
        #expect(try f.waitForState("a", "Repeat", 1) == "COMPLETE")
        #expect(
            f.events.withLock {
                $0.contains {
                    $0.contains("a/Repeat version 1: 1 distinct chunks, 1 decompressions, 268435456 file bytes hashed")
                }
            },
            "\(f.events.withLock { $0 })")
        // A wrong file digest is still found (every file's SHA-256 is checked).
        let wrong = try CraftedPack.repeatedChunk(id: "Repeat", references: 64, correctDigest: false)
        try f.upload(app: "a", pack: "Repeat", wrong)
        #expect(try f.waitForState("a", "Repeat", 2) == "FAILED")
        let reason = try f.version("a", "Repeat", 2)["reason"]?.stringValue ?? ""
        #expect(
            reason.contains("file \"big.bin\"") && reason.contains("SHA-256") && !reason.contains(f.dir.path),
            "\(reason)")
    }

    @Test func oneAppsHeavyUploadsHoldNoOtherAppBackAndDeletionCancelsThem() throws {
        let f = try Fixture()
        // Two uploads of 32 GiB each (a few KB on the wire) from app "heavy", then a small one from
        // "light": tens of seconds of hashing, so that they are still being processed however
        // loaded the machine (deleting them cancels them: the test does not wait for them).
        let bomb = try CraftedPack.repeatedChunk(id: "Bomb", references: 8192, correctDigest: false)
        try f.upload(app: "heavy", pack: "Bomb", bomb)
        try f.upload(app: "heavy", pack: "Bomb", bomb)
        try f.upload(app: "light", pack: "Levels", try smallPack("Levels", seed: 3))
        // The light app's upload is processed while the heavy app's are still being (or waiting to be) processed.
        #expect(try f.waitForState("light", "Levels", 1) == "COMPLETE")
        #expect(try f.state("heavy", "Bomb", 1) == "PROCESSING" && f.state("heavy", "Bomb", 2) == "PROCESSING")
        // Deleting them answers at once and stops their processing instead of waiting for it.
        #expect(try f.call("DELETE", "/api/apps/heavy/packs/Bomb/versions/2").status == 200)
        #expect(try f.call("DELETE", "/api/apps/heavy/packs/Bomb/versions/1").status == 200)
        f.repository.uploads.waitForProcessing()
        let outcomes = f.outcomes.withLock { $0 }
        #expect(
            outcomes.filter { $0 == "complete" }.count == 1 && outcomes.filter { $0 == "cancelled" }.count == 1,
            "\(outcomes)")
        #expect(try f.call("GET", "/api/apps/heavy/packs/Bomb/versions/1").status == 404)
        #expect(
            try FileManager.default.contentsOfDirectory(
                atPath: try #require(f.repository.archives as? LocalArchiveStore).uploadsPath
            ).isEmpty)
        let metrics = try Curl.run(f.server.baseURL + "metrics").text
        #expect(metrics.contains("outcome=\"cancelled\"} 1"), "\(metrics)")
    }

    @Test func processingStoppedWithTheServerIsTakenUpAtTheNextStart() throws {
        let f = try Fixture()
        // 2 GiB of file bytes from one chunk (seconds of hashing), and a small upload queued behind it.
        try f.upload(
            app: "a", pack: "Big", try CraftedPack.repeatedChunk(id: "Big", references: 512, correctDigest: true))
        try f.upload(app: "a", pack: "Levels", try smallPack("Levels", seed: 4))
        func versions(_ repository: Repository) throws -> [String] {
            try repository.db.read {
                try $0.query("SELECT pack, state, lease_owner FROM versions ORDER BY id").map {
                    "\($0["pack"]?.string ?? "") \($0["state"]?.string ?? "") \($0["lease_owner"]?.string ?? "-")"
                }
            }
        }
        // Stopped while the big one is being processed (its lease is held) and the small one waits.
        try Wait.until("the big version's processing holds its lease", timeout: .seconds(30), poll: .milliseconds(5)) {
            try versions(f.repository).first?.hasSuffix(" -") == false
        }
        #expect(try versions(f.repository).first?.hasPrefix("Big PROCESSING ") == true)
        f.server.stop(grace: 0)
        f.repository.uploads.stopProcessing()
        #expect(f.outcomes.withLock { $0 } == ["interrupted"])
        #expect(try versions(f.repository) == ["Big PROCESSING -", "Levels PROCESSING -"])
        #expect(f.events.withLock { $0.contains { $0.contains("stopped with the server") } })
        // Nothing more is scheduled once stopped.
        #expect(try f.repository.uploads.takeOverAbandonedProcessing() == 2)
        f.repository.uploads.waitForProcessing()
        #expect(try versions(f.repository) == ["Big PROCESSING -", "Levels PROCESSING -"])

        // The next start on the same data folder processes both (a repository takes up, as it
        // opens, the processing nobody holds).
        let next = try Repository(directory: RepositoryDirectory(path: f.dir.at("data")))
        next.uploads.waitForProcessing()
        #expect(try versions(next) == ["Big COMPLETE -", "Levels COMPLETE -"])
    }

    @Test func failedReasonsNameNoServerPath() throws {
        let f = try Fixture()
        var bytes = try smallPack("Levels", seed: 5)
        bytes[bytes.count - 10] ^= 0xFF  // inside the index: its SHA-256 no longer matches the header
        try f.upload(app: "a", pack: "Levels", bytes)
        var chunk = try smallPack("Levels", seed: 6)
        chunk[70] ^= 0xFF  // inside the first chunk
        try f.upload(app: "a", pack: "Levels", chunk)
        try f.upload(app: "a", pack: "Levels", try smallPack("Other", seed: 7))
        for number in 1...3 {
            #expect(try f.waitForState("a", "Levels", number) == "FAILED")
            let reason = try f.version("a", "Levels", number)["reason"]?.stringValue ?? ""
            #expect(
                !reason.isEmpty && !reason.contains(f.dir.path) && !reason.contains("/tmp")
                    && !reason.contains("uploads"), "\(number): \(reason)")
            #expect(reason.contains("the archive"), "\(number): \(reason)")
        }
        // The server's log has the full story.
        #expect(f.events.withLock { $0.filter { $0.contains("failed") }.count } == 3)
        #expect(
            Uploads.withoutPaths("chunk 3 of /srv/data/uploads/7.part: bad (see /x/y)")
                == "chunk 3 of [path]: bad (see [path])")
    }
}
