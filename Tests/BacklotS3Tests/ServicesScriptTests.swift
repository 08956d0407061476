import BacklotBasics
import BacklotTestSupport
import Foundation
import Testing

/// `scripts/services` without starting anything: what it says when it cannot.
@Suite(.serialized) struct ServicesScriptTests {
    func run(_ arguments: [String], path: String? = nil) throws -> (status: Int32?, output: String) {
        var environment = ProcessInfo.processInfo.environment
        if let path { environment["PATH"] = path }
        let child = try ChildProcess.start(
            executable: ServicesScript.path, arguments: arguments, environment: environment, captureOutput: true)
        try child.release()
        let outcome = child.wait(until: .now + .seconds(60), keepingLast: 1 << 16)
        return (outcome.exitStatus, String(decoding: outcome.output, as: UTF8.self))
    }

    @Test func stopIsIdempotentAndEnvSaysHowToStart() throws {
        let dir = try TemporaryDirectory("services")
        defer { dir.remove() }
        #expect(try run(["stop", dir.path]).status == 0)
        #expect(try run(["stop", dir.path + "/never-made"]).status == 0)
        let env = try run(["env", dir.path])
        #expect(env.status != 0)
        #expect(env.output.contains("start radosgw"))
        #expect(try run(["start", "minio", dir.path]).status != 0)
    }

    @Test func missingPackagesPointToBootstrap() throws {
        let dir = try TemporaryDirectory("services-nopkg")
        defer { dir.remove() }
        // A PATH with only what the script needs before it looks for Ceph.
        let bin = dir.at("bin")
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
        for tool in ["bash", "dirname"] {
            try FileManager.default.createSymbolicLink(
                atPath: bin + "/" + tool, withDestinationPath: "/usr/bin/" + tool)
        }
        let r = try run(["start", "radosgw", dir.at("cluster")], path: bin)
        #expect(r.status == 3)
        #expect(r.output.contains("ceph-mon ceph-osd ceph-common radosgw"))
        #expect(r.output.contains("scripts/bootstrap"))
        #expect(!FileManager.default.fileExists(atPath: dir.at("cluster")))
    }
}
