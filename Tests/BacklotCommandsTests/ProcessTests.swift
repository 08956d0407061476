import BacklotBasics
import BacklotCommands
import BacklotTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The real `backlot` executable (built by `swift test` as a package product), run as a process.
@Suite(.serialized) struct ProcessTests {
    static var binary: String {
        let candidates = [
            URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("backlot")
                .path,
            URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent()
                .appendingPathComponent(".build/debug/backlot").path,
        ]
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) } ?? candidates[1]
    }

    func launch(_ args: [String]) throws -> Process {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: Self.binary)
        p.arguments = args
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        return p
    }

    @Test func exitStatusesOfTheRealProcess() throws {
        #expect(FileManager.default.isExecutableFile(atPath: Self.binary), "build the package first: \(Self.binary)")
        let help = try launch(["--help"])
        help.waitUntilExit()
        #expect(help.terminationStatus == 0)
        let usage = try launch(["package"])
        usage.waitUntilExit()
        #expect(usage.terminationStatus == 2)
        // A missing input is invalid input (2), like a usage error; a failure of the operation is 1.
        let missing = try launch(["verify", "/nonexistent/x.pack"])
        missing.waitUntilExit()
        #expect(missing.terminationStatus == 2)
    }

    /// SIGINT during packaging removes the temporary file: nothing half-written is left.
    @Test func interruptedPackagingLeavesNothingBehind() throws {
        let dir = try TemporaryDirectory("sigint")
        defer { dir.remove() }
        var g = SeededGenerator(seed: 3)
        for i in 0..<8 { try dir.write("src/f\(i).txt", g.text(4 << 20)) }
        try dir.write(
            "M.json",
            #"{"assetPackID":"S","downloadPolicy":{"onDemand":{}},"fileSelectors":[{"directory":"."}],"platforms":["linux"]}"#
        )
        let p = try launch([
            "package", dir.at("M.json"), "--source-root", dir.at("src"), "-o", dir.at("out.pack"), "--level", "19",
            "--jobs", "1",
        ])
        // Wait until the temporary file exists, then interrupt.
        var sawTemporary = false
        for _ in 0..<2000 where p.isRunning {
            if (try dir.listing()).contains(where: { $0.hasPrefix(".out.pack.tmp-") }) {
                sawTemporary = true
                break
            }
            usleep(5_000)
        }
        #expect(sawTemporary, "the packager never created its temporary file")
        kill(p.processIdentifier, SIGINT)
        p.waitUntilExit()
        #expect(p.terminationStatus == 130)
        #expect(try dir.listing() == ["M.json", "src"])
    }
}
