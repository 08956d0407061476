import BacklotBasics
import BacklotTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The release week as a new user types it, in bash and in zsh, with the `backlot` binary: the
/// server and CA in the environment, tokens in private files (never on the command line).
@Suite(.serialized) struct ReleaseWeekShellTests {
    /// The week, one command a line; `$1` is the app, the shell's own variables only for paths.
    static let script = #"""
        set -e
        app="$1"
        backlot tokens create --role uploader --label ci -o uploader.token --token-file admin.token
        backlot tokens create --role reviewer --label "release manager" -o reviewer.token --token-file admin.token
        backlot apps create "$app" --token-file admin.token
        backlot upload v1.pack --app "$app" --token-file uploader.token
        backlot release --app "$app" --pack Levels --version 1 --channel internal --token-file uploader.token
        backlot release --app "$app" --pack Levels --version 1 --channel external --token-file uploader.token
        backlot approve --app "$app" --pack Levels --channel external --token-file reviewer.token
        backlot release --app "$app" --pack Levels --version 1 --channel production --token-file uploader.token
        backlot approve --app "$app" --pack Levels --channel production --token-file reviewer.token
        backlot upload v2.pack --app "$app" --token-file uploader.token
        backlot release --app "$app" --pack Levels --version 2 --channel production --rollout 10 --dry-run --token-file uploader.token
        backlot release --app "$app" --pack Levels --version 2 --channel production --rollout 10 --token-file uploader.token
        backlot approve --app "$app" --pack Levels --channel production --token-file reviewer.token
        backlot rollout --app "$app" --pack Levels --percent 50 --token-file reviewer.token
        backlot rollout --app "$app" --pack Levels --percent 0 --token-file reviewer.token
        backlot rollback --app "$app" --pack Levels --channel production --token-file reviewer.token
        backlot catalog show --app "$app" --channel production --token-file reviewer.token
        backlot releases list --app "$app" --token-file reviewer.token
        cat admin.token | backlot tokens list --token-file -
        id=$(backlot tokens list --token-file admin.token | awk -F '\t' '$3 == "ci" && $7 == "active" { print $1 }')
        backlot tokens revoke "$id" --token-file admin.token
        if backlot packs list --app "$app" --token-file uploader.token 2> refused.txt; then exit 9; fi
        grep -q 401 refused.txt
        admin_id=$(backlot tokens list --token-file admin.token | awk -F '\t' '$2 == "admin" { print $1 }')
        backlot tokens rotate "$admin_id" -o admin.token --token-file admin.token
        backlot apps list --token-file admin.token
        echo WEEK DONE
        """#

    @Test(.requires(.tool("bash"))) func aReleaseWeekInBash() throws {
        try releaseWeek(in: "bash", binary: Requirement.tool("bash").path())
    }

    /// zsh is required (scripts/bootstrap installs it), as bash is.
    @Test(.requires(.zsh)) func aReleaseWeekInZsh() throws {
        try releaseWeek(in: "zsh", binary: Requirement.zsh.path())
    }

    func releaseWeek(in shell: String, binary: String) throws {
        let s = try ServedRepository("cli-shell-\(shell)")
        defer { s.stop() }
        let work = s.dir.at("work")
        try FileSystem.makeDirectory(work)
        _ = try s.dir.write("work/admin.token", s.admin + "\n", mode: 0o600)
        try SamplePack.writeTree(in: s.dir, seed: 1)
        try FileManager.default.copyItem(
            atPath: try SamplePack.build(in: s.dir, manifestJSON: SamplePack.manifest(id: "Levels"), name: "a.pack"),
            toPath: work + "/v1.pack")
        try SamplePack.writeTree(in: s.dir, seed: 2)
        try FileManager.default.copyItem(
            atPath: try SamplePack.build(in: s.dir, manifestJSON: SamplePack.manifest(id: "Levels"), name: "b.pack"),
            toPath: work + "/v2.pack")
        let bin = s.dir.at("bin")
        try FileSystem.makeDirectory(bin)
        try FileManager.default.createSymbolicLink(atPath: bin + "/backlot", withDestinationPath: ProcessTests.binary)
        let scriptPath = try s.dir.write("week.sh", Self.script)

        let p = Process()
        p.executableURL = URL(fileURLWithPath: binary)
        p.arguments = (shell == "zsh" ? ["-f"] : ["--norc", "--noprofile"]) + [scriptPath, "com.example.\(shell)"]
        p.currentDirectoryURL = URL(fileURLWithPath: work)
        var environment = [
            "PATH": bin + ":/usr/bin:/bin", "HOME": s.dir.path, "BACKLOT_SERVER": s.server.baseURL, "BACKLOT_CA": s.ca,
        ]
        environment["LANG"] = "C.UTF-8"
        p.environment = environment
        let out = Pipe()
        let err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        // A week that hangs is killed after 5 minutes (and fails).
        let watchdog = DispatchWorkItem { if p.isRunning { kill(p.processIdentifier, SIGKILL) } }
        DispatchQueue.global().asyncAfter(deadline: .now() + 300, execute: watchdog)
        defer { watchdog.cancel() }
        let errText = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        #expect(p.terminationReason == .exit, "\(shell): the week took longer than 5 minutes and was killed")
        #expect(p.terminationStatus == 0 && text.contains("WEEK DONE"), "\(shell): \(text)\n\(errText)")
        #expect(text.contains("Levels\tlive v1"), "\(shell): catalog show after the rollback: \(text)")
        #expect(text.contains("Dry run, nothing changed"), "\(text)")
        #expect(!text.contains(s.admin) && !errText.contains(s.admin), "the admin token never shows")
    }
}
