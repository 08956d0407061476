import BacklotBasics
import BacklotCrypto
import BacklotFormat
import BacklotHTTPClient
import BacklotJSON
import BacklotProtocol
import BacklotTestSupport
import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The attack of issue #25 on every reader, as real processes: an 11 MB pack of format version 2
/// declaring 1,000,000 empty files whose paths share 4,000 bytes (4 GB of paths once decoded).
/// Each process must refuse it, naming the limit, within 512 MiB of memory and 10 s of CPU
/// (measured by the kernel: `ru_maxrss`, `ru_utime + ru_stime`, or `VmHWM` for the server).
@Suite(.serialized) struct AmplificationProcessTests {
    static let memoryLimit: UInt64 = 512 << 20
    /// `python3 -c measuringParent REPORT COMMAND ARGS…`: runs the command as its child and
    /// writes the child's peak resident set (KiB) and CPU time (µs) to REPORT.
    static let measuringParent = """
        import os, sys
        pid = os.fork()
        if pid == 0:
            os.execv(sys.argv[2], sys.argv[2:])
        _, status, usage = os.wait4(pid, 0)
        with open(sys.argv[1], "w") as f:
            f.write("%d %d" % (usage.ru_maxrss, int((usage.ru_utime + usage.ru_stime) * 1e6)))
        sys.exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status))
        """
    static let cpuLimit = Duration.seconds(10)
    static let refusal = "a pack's paths may hold at most \(PackIndex.Limits.pathBytes) in all"

    /// The crafted pack, made once for the suite.
    static let amplifier = Mutex<[UInt8]?>(nil)
    func amplifier() throws -> [UInt8] {
        if let made = Self.amplifier.withLock({ $0 }) { return made }
        let made = try CraftedPack.manyPaths(count: 1_000_000, prefixLength: 4_000)
        Self.amplifier.withLock { $0 = made }
        return made
    }

    /// Runs `backlot ARGS` to its end (at most two minutes) and checks that it failed printing
    /// `phrase` (by default the path-bytes limit), within the bounds; returns how it ended.
    @discardableResult
    func expectRefused(
        _ arguments: [String], with phrase: String = refusal, sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> ChildProcess.Outcome {
        // Through a small Python parent that forks the command and reports its rusage: a child
        // forked from this test process would count the test process's own resident set in its
        // ru_maxrss (Linux carries the forked memory's high-water mark across exec), which grows
        // with the tests running beside it.
        let report = FileManager.default.temporaryDirectory.appendingPathComponent("amplification-\(UUID().uuidString)")
            .path
        defer { try? FileManager.default.removeItem(atPath: report) }
        var outcome = try ChildProcess.run(
            executable: "/usr/bin/python3",
            arguments: ["-c", Self.measuringParent, report, ProcessTests.binary] + arguments,
            environment: ["HOME": "/nonexistent"], until: .now + .seconds(120))
        let measured = (try? String(contentsOfFile: report, encoding: .utf8))?.split(separator: " ") ?? []
        #expect(measured.count == 2, "the measuring parent reported nothing", sourceLocation: sourceLocation)
        if measured.count == 2, let kib = UInt64(measured[0]), let microseconds = Int64(measured[1]) {
            outcome.peakResidentBytes = kib * 1024
            outcome.cpuTime = .microseconds(microseconds)
        }
        let output = String(decoding: outcome.output, as: UTF8.self)
        let command = "backlot \(arguments.joined(separator: " "))"
        #expect(
            !outcome.timedOut && outcome.exitStatus != nil && outcome.exitStatus != 0, "\(command): \(output)",
            sourceLocation: sourceLocation)
        #expect(output.contains(phrase), "\(command) printed: \(output.suffix(2000))", sourceLocation: sourceLocation)
        #expect(
            outcome.peakResidentBytes > 0 && outcome.peakResidentBytes < Self.memoryLimit,
            "\(command) peaked at \(outcome.peakResidentBytes >> 20) MiB", sourceLocation: sourceLocation)
        #expect(
            outcome.cpuTime < Self.cpuLimit, "\(command) used \(outcome.cpuTime) of CPU", sourceLocation: sourceLocation
        )
        print(
            "AmplificationProcessTests: \(arguments[0]) refused it at \(outcome.peakResidentBytes >> 20) MiB, \(outcome.cpuTime) of CPU"
        )
        return outcome
    }

    @Test func everyCommandThatReadsAPackRefusesTheAmplifierWithinBounds() throws {
        let dir = try TemporaryDirectory("amplifier-commands")
        defer { dir.remove() }
        let pack = try amplifier()
        #expect(pack.count < 16 << 20, "the attack is under 16 MB: \(pack.count)")
        try Data(pack).write(to: URL(fileURLWithPath: dir.at("amplifier.pack")))
        try SamplePack.writeTree(in: dir)
        let small = try SamplePack.build(in: dir)
        try expectRefused(["inspect", dir.at("amplifier.pack")])
        try expectRefused(["inspect", "--files", dir.at("amplifier.pack")])
        try expectRefused(["inspect", "--json", dir.at("amplifier.pack")])
        try expectRefused(["verify", dir.at("amplifier.pack")])
        try expectRefused(["extract", dir.at("amplifier.pack"), "-o", dir.at("out")])
        #expect(!FileSystem.exists(dir.at("out")))
        try expectRefused(["diff", small, dir.at("amplifier.pack")])
        try expectRefused(["diff", dir.at("amplifier.pack"), small])
    }

    @Test func fetchRefusesTheAmplifierFromASignedCatalogWithinBounds() throws {
        let fixture = try ClientFixture()
        // A catalog a compromised publisher could have signed: it names the pack as it is.
        try publish(try amplifier(), installSize: 0, in: fixture)
        try expectRefused([
            "fetch", "--catalog", fixture.catalogURL().absoluteString, "--trust",
            fixture.repository.directory.publicKeyPath, "--container", fixture.dir.at("device"),
        ])
        // Nothing of it was installed.
        let status = try ChildProcess.run(
            executable: ProcessTests.binary, arguments: ["status", "--container", fixture.dir.at("device"), "--json"],
            environment: [:], until: .now + .seconds(60))
        #expect(!String(decoding: status.output, as: UTF8.self).contains("Crafted"))
    }

    @Test func fetchRefusesTerabytesDeclaredByOneChunkWithinBounds() throws {
        let fixture = try ClientFixture()
        // 16 MB of references to one 4 MiB chunk of zeros: one file of 16 TB.
        let pack = try CraftedPack.repeatedChunk(id: "Crafted", references: 4_000_000, correctDigest: false)
        #expect(pack.count < 16 << 20)
        try publish(pack, installSize: 4_000_000 * UInt64(CraftedPack.chunkSize), in: fixture)
        let outcome = try expectRefused(
            [
                "fetch", "--catalog", fixture.catalogURL().absoluteString, "--trust",
                fixture.repository.directory.publicKeyPath, "--container", fixture.dir.at("device"),
            ], with: "installing Crafted needs 16777216000000 bytes but only")
        let output = String(decoding: outcome.output, as: UTF8.self)
        #expect(outcome.exitStatus == 1, "a failure of the install, not of the input: \(output)")
        #expect(output.contains("hint: free some disk space"), "\(output.suffix(2000))")
    }

    /// Puts `pack` in the fixture's tree as is and signs a catalog naming it (what a compromised
    /// publisher could do), as version 1 of pack "Crafted" on the internal channel.
    func publish(_ pack: [UInt8], installSize: UInt64, in fixture: ClientFixture) throws {
        let header = try PackHeader.decode(
            Array(pack.prefix(PackHeader.size)), fileSize: UInt64(pack.count), source: "crafted")
        let sha = SHA256.hash(pack)
        let packs = fixture.repository.directory.publicTreePath + "/v1/packs"
        try FileManager.default.createDirectory(atPath: packs, withIntermediateDirectories: true)
        try Data(pack).write(to: URL(fileURLWithPath: packs + "/\(sha.hex).pack"))
        let release = Catalog.Release(
            version: 1, downloadPolicy: .onDemand, platforms: [.linux], userInfo: nil, language: nil,
            installSize: installSize, archiveURL: "../../../packs/\(sha.hex).pack", archiveSize: UInt64(pack.count),
            archiveSHA256: sha, indexOffset: header.indexOffset, indexLength: header.indexLength,
            indexSHA256: header.indexDigest)
        try fixture.publishCatalog(
            Catalog(
                app: fixture.app, channel: .internal, version: UInt64(Date().timeIntervalSince1970) + 1000,
                issued: Date(), expires: Date().addingTimeInterval(86_400),
                packs: [Catalog.Entry(id: try PackID("Crafted"), release: release)]))
    }

    @Test func theServerFailsTheUploadWithinBoundsAndPublishesNothing() throws {
        let dir = try TemporaryDirectory("amplifier-server")
        defer { dir.remove() }
        let pack = try amplifier()
        let server = try ServerProcessTests.Server(data: dir.at("data"))
        defer { _ = server.terminate() }
        let token = try String(contentsOfFile: dir.at("data/admin-token"), encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let http = HTTPClient()
        func api(_ method: String, _ path: String, _ json: String? = nil) throws -> HTTPClient.Response {
            try http.send(
                method, server.baseURL + path,
                headers: ["Authorization": "Bearer \(token)", "Content-Type": "application/json"],
                body: json.map { .bytes(Array($0.utf8)) })
        }
        #expect(try api("POST", "api/apps", #"{"id":"a"}"#).status == 201)
        #expect(try api("POST", "api/apps/a/packs", #"{"id":"Crafted"}"#).status == 201)
        #expect(try api("POST", "api/apps/a/packs/Crafted/versions", "{\"size\":\(pack.count)}").status == 201)
        let put = try http.send(
            "PUT", server.baseURL + "api/apps/a/packs/Crafted/versions/1/archive",
            headers: ["Authorization": "Bearer \(token)"], body: .bytes(pack))
        #expect((200..<300).contains(put.status), "PUT answered \(put.status)")
        // Processing ends (the state leaves PROCESSING) within two minutes.
        let deadline = SuspendingClock.now + .seconds(120)
        var version: JSONNode? = nil
        while SuspendingClock.now < deadline {
            let r = try api("GET", "api/apps/a/packs/Crafted/versions/1")
            let node = try JSONReader(source: "version").read(r.body).root
            if let state = node["state"]?.stringValue, state != "PROCESSING", state != "UPLOADING" {
                version = node
                break
            }
            usleep(100_000)
        }
        let ended = try #require(version, "the upload was still being processed after two minutes")
        #expect(ended["state"]?.stringValue == "FAILED")
        #expect(ended["reason"]?.stringValue?.contains(Self.refusal) == true, "\(ended.serialized())")
        let peak = try Self.peakResidentBytes(of: server.process.processIdentifier)
        #expect(peak < Self.memoryLimit, "backlot serve peaked at \(peak >> 20) MiB")
        print("AmplificationProcessTests: serve failed the upload at a peak of \(peak >> 20) MiB")
        #expect(!FileSystem.exists(dir.at("data/public/v1/apps/a/internal/catalog.json")))
    }

    /// 16 MB of JSON made of the smallest values (`[0],[0],…`: a value every two bytes), which a
    /// reader that keeps every value would hold in half a gigabyte.
    static func tinyValues(around object: (String) -> String) -> [UInt8] {
        let count = (16_000_000 - 300) / 4
        var items = "[0]"
        items.reserveCapacity(count * 4)
        for _ in 1..<count { items += ",[0]" }
        return Array(object(items).utf8)
    }

    @Test func jsonOfTinyValuesIsRefusedWithinBoundsAsAManifestAndAsACatalog() throws {
        let fixture = try ClientFixture()
        let limit = "more than \(JSONReader.standardMaximumValues) values"
        // A manifest whose userInfo is 4 million arrays.
        let manifest = Self.tinyValues {
            #"{"assetPackID":"A","downloadPolicy":{"onDemand":{}},"fileSelectors":[{"file":"a"}],"platforms":["linux"],"userInfo":["#
                + $0 + "]}"
        }
        #expect(manifest.count < 16 << 20)
        try Data(manifest).write(to: URL(fileURLWithPath: fixture.dir.at("M.json")))
        try fixture.dir.write("src/a", Array("a".utf8))
        try expectRefused(["evaluate", fixture.dir.at("M.json"), "--source-root", fixture.dir.at("src")], with: limit)
        // A catalog (unsigned: the envelope is read before any signature can be checked).
        let catalog = Self.tinyValues {
            #"{"payloadType":"application/vnd.backlot.catalog+json","payload":"","signatures":["# + $0 + "]}"
        }
        let path = fixture.repository.publication.catalogPath(app: fixture.app, channel: .internal)
        try FileManager.default.createDirectory(
            atPath: URL(fileURLWithPath: path).deletingLastPathComponent().path, withIntermediateDirectories: true)
        try Data(catalog).write(to: URL(fileURLWithPath: path))
        try expectRefused(
            [
                "fetch", "--catalog", fixture.catalogURL().absoluteString, "--trust",
                fixture.repository.directory.publicKeyPath, "--container", fixture.dir.at("device"),
            ], with: limit)
    }

    /// The largest resident set of a running process so far (`VmHWM` in /proc/PID/status).
    static func peakResidentBytes(of pid: Int32) throws -> UInt64 {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
            let kib = UInt64(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
        else { throw BacklotError(.io, "no VmHWM in /proc/\(pid)/status") }
        return kib * 1024
    }
}
