import BacklotBasics
import BacklotJSON
import BacklotRepository
import BacklotServer
import BacklotTestSupport
import Foundation
import Testing

@testable import BacklotCommands

/// The command line's own conventions: typed options and their errors, group help, completion
/// scripts, JSON errors, and the server options from flags, the environment and profiles
/// (against a real server over HTTPS with its local CA).
@Suite(.serialized) struct CommandConventionsTests {
    func run(
        _ args: [String], environment: [String: String] = [:], stdin: [UInt8] = []
    ) -> (status: Int32, out: String, err: String) {
        let io = CapturedIO(environment: environment, standardInput: stdin)
        let status = BacklotCLI.main(args, io: io)
        return (status, io.standardOutput, io.standardError)
    }

    @Test func everyMissingRequiredOptionIsReportedInOneError() {
        let r = run(["release", "--server", "https://127.0.0.1:1", "--token", "blt_x"])
        #expect(r.status == 2)
        #expect(r.err.contains("missing --app APP, --pack ID, --version N and --channel CHANNEL"), "\(r.err)")
        let noToken = run(["versions", "--json"])
        #expect(
            noToken.status == 2 && noToken.err.contains("--server URL (or $BACKLOT_SERVER)")
                && noToken.err.contains("an API token"), "\(noToken.err)")
    }

    /// An option's value is never the next option: `--reject --json` is an error, not a rejection
    /// whose reason is "--json"; a value that starts with "--" is given as --name=VALUE.
    @Test func anOptionNeverTakesTheNextOptionAsItsValue() {
        let reject = run([
            "approve", "--server", "https://127.0.0.1:1", "--token", "blt_x", "--app", "a", "--request", "1",
            "--reject", "--json",
        ])
        #expect(
            reject.status == 2 && reject.err.contains("--reject needs a value") && reject.err.contains("--json"),
            "\(reject.err)")
        let label = run([
            "tokens", "create", "--server", "https://127.0.0.1:1", "--token", "blt_x", "--role", "reader", "--label",
            "--json",
        ])
        #expect(label.status == 2 && label.err.contains("--label needs a value"), "\(label.err)")
        let inline = run([
            "tokens", "create", "--server", "https://127.0.0.1:1", "--token", "blt_x", "--role", "reader",
            "--label=--ci",
        ])
        #expect(!inline.err.contains("needs a value"), "--name=VALUE takes any value: \(inline.err)")
    }

    @Test func valuesAreCheckedAgainstTheirDeclaredType() {
        let channel = run([
            "release", "--server", "https://h", "--token", "t", "--app", "a", "--pack", "p", "--version", "1",
            "--channel", "prod",
        ])
        #expect(
            channel.status == 2
                && channel.err.contains("--channel must be one of internal, external or production, not 'prod'"),
            "\(channel.err)")
        let percent = run([
            "rollout", "--server", "https://h", "--token", "t", "--app", "a", "--pack", "p", "--percent", "101",
        ])
        #expect(
            percent.status == 2 && percent.err.contains("--percent must be a percentage from 0 to 100"),
            "\(percent.err)")
        let expiry = run([
            "tokens", "create", "--server", "https://h", "--token", "t", "--role", "reader", "--expires", "10x",
        ])
        #expect(expiry.status == 2 && expiry.err.contains("--expires must be a duration"), "\(expiry.err)")
        let fromEnvironment = run(["apps", "list"], environment: ["BACKLOT_SERVER": "ftp://h", "BACKLOT_TOKEN": "t"])
        #expect(
            fromEnvironment.status == 2 && fromEnvironment.err.contains("not 'ftp://h' (from $BACKLOT_SERVER)"),
            "\(fromEnvironment.err)")
        let typo = run(["rollback", "--chanel", "production"])
        #expect(typo.status == 2 && typo.err.contains("did you mean --channel?"))
    }

    @Test func groupsListTheirSubcommands() {
        for args in [["apps"], ["apps", "--help"], ["help", "apps"]] {
            let r = run(args)
            #expect(r.status == 0, "\(args)")
            #expect(
                r.out.contains("apps list") && r.out.contains("apps create") && r.out.contains("apps set"),
                "\(args): \(r.out)")
        }
        let tokens = run(["tokens"])
        for sub in ["list", "create", "revoke", "rotate"] { #expect(tokens.out.contains("tokens \(sub)")) }
        for args in [["versions", "--help"], ["versions"], ["agent"]] {
            let r = run(args)
            #expect(
                r.status == 0 && r.out.contains("Usage: backlot \(args[0])") && r.out.contains("Subcommands:"),
                "\(args): \(r)")
        }
        #expect(run(["versions"]).out.contains("versions delete") && run(["agent"]).out.contains("agent status"))
        #expect(run(["versions", "--app", "a"]).err.contains("missing"), "with options it is the command")
        let wrong = run(["apps", "lst"])
        #expect(wrong.status == 2 && wrong.err.contains("did you mean 'apps list'?"), "\(wrong.err)")
        let top = run(["--help"])
        #expect(top.out.contains("--version") && top.out.contains("completion") && top.out.contains("BACKLOT_SERVER"))
        for name in [
            "packs list", "releases list", "catalog show", "rollout", "rollback", "withdraw", "reject", "tokens revoke",
            "tokens rotate",
        ] {
            let help = run(name.split(separator: " ").map(String.init) + ["--help"])
            #expect(
                help.status == 0 && help.out.contains("Usage: backlot \(name)") && help.out.contains("--json"),
                "\(name)")
        }
    }

    @Test func underJSONErrorsAreJSONOnStandardError() throws {
        let r = run(["release", "--json", "--server", "https://h", "--token", "t"])
        #expect(r.status == 2 && r.out.isEmpty)
        let root = try JSONReader(source: "stderr").read(r.err).root
        #expect(root["error"]?["code"]?.stringValue == "usage")
        #expect(root["error"]?["message"]?.stringValue?.contains("--app APP") == true)
        #expect(root["error"]?["context"]?.stringValue == "backlot release")
        #expect(root["error"]?["hint"] != nil)
    }

    @Test func bashCompletionIsGeneratedFromTheCommandTable() throws {
        let dir = try TemporaryDirectory("cli-completion")
        defer { dir.remove() }
        let script = run(["completion", "bash"])
        #expect(script.status == 0)
        let path = try dir.write("backlot.bash", script.out)
        func bash(_ code: String) throws -> String {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: "/bin/bash")
            p.arguments = ["--norc", "-c", "source \(path) && \(code)"]
            let pipe = Pipe()
            p.standardOutput = pipe
            try p.run()
            let out = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            p.waitUntilExit()
            return out
        }
        #expect(try bash("complete -p backlot").contains("-F _backlot backlot"))
        let groups = try bash(#"COMP_WORDS=(backlot tok); COMP_CWORD=1; _backlot; echo "${COMPREPLY[@]}""#)
        #expect(groups.contains("tokens"), "\(groups)")
        let subcommands = try bash(#"COMP_WORDS=(backlot tokens ''); COMP_CWORD=2; _backlot; echo "${COMPREPLY[@]}""#)
        #expect(subcommands.contains("revoke") && subcommands.contains("rotate"), "\(subcommands)")
        let options = try bash(#"COMP_WORDS=(backlot rollback --ch); COMP_CWORD=2; _backlot; echo "${COMPREPLY[@]}""#)
        #expect(options.contains("--channel"), "\(options)")
        let own = try bash(#"COMP_WORDS=(backlot versions --ap); COMP_CWORD=2; _backlot; echo "${COMPREPLY[@]}""#)
        #expect(own.contains("--app"), "a group that is also a command completes its options: \(own)")
        let values = try bash(
            #"COMP_WORDS=(backlot release --channel p); COMP_CWORD=3; _backlot; echo "${COMPREPLY[@]}""#)
        #expect(values.trimmingCharacters(in: .whitespacesAndNewlines) == "production", "\(values)")
        #expect(run(["completion", "tcsh"]).status == 2)
    }

    /// Runs `binary` with `arguments`, returning its exit status and standard output (60 s at most).
    func shell(_ binary: String, _ arguments: [String]) throws -> (Int32, String) {
        let outcome = try ChildProcess.run(
            executable: binary, arguments: arguments, environment: ProcessInfo.processInfo.environment,
            until: .now + .seconds(60))
        #expect(!outcome.timedOut, "\(binary) \(arguments) took longer than 60 s")
        return (outcome.exitStatus ?? -1, String(decoding: outcome.output, as: UTF8.self))
    }

    /// zsh's completion script: parse-checked, then asked for completions (zsh is required: scripts/bootstrap installs it).
    @Test(.requires(.zsh)) func zshCompletionIsGeneratedFromTheCommandTable() throws {
        let zsh = try Requirement.zsh.path()
        let dir = try TemporaryDirectory("cli-completion-zsh")
        defer { dir.remove() }
        let script = run(["completion", "zsh"])
        #expect(script.status == 0)
        let file = try dir.write("_backlot", script.out)
        let parsed = try shell(zsh, ["-n", file])
        #expect(parsed.0 == 0, "zsh -n: \(parsed.1)")
        // compadd and compdef stubbed to print what the function offers.
        let probe = try dir.write(
            "probe.zsh",
            """
            compdef() { :; }; compadd() { [[ "$1" == "--" ]] && shift; print -r -- "$@"; }; _files() { print FILES; }
            source \(file)
            words=(backlot tokens ''); CURRENT=3; _backlot
            words=(backlot release --channel ''); CURRENT=4; _backlot
            """)
        let (status, out) = try shell(zsh, ["-f", probe])
        #expect(
            status == 0 && out.contains("list create revoke rotate") && out.contains("internal external production"),
            "\(out)")
    }

    /// fish's completion script: parse-checked, then asked for completions (fish is required: scripts/bootstrap installs it).
    @Test(.requires(.fish)) func fishCompletionIsGeneratedFromTheCommandTable() throws {
        let fish = try Requirement.fish.path()
        let dir = try TemporaryDirectory("cli-completion-fish")
        defer { dir.remove() }
        let script = run(["completion", "fish"])
        #expect(script.status == 0)
        let file = try dir.write("backlot.fish", script.out)
        let parsed = try shell(fish, ["--no-execute", file])
        #expect(parsed.0 == 0, "fish --no-execute: \(parsed.1)")
        let (status, out) = try shell(fish, ["-c", "source \(file); complete -C 'backlot tokens r'"])
        #expect(status == 0 && out.contains("revoke") && out.contains("rotate"), "\(out)")
    }

    @Test func progressShowsTheRateAndTheTimeLeft() {
        #expect(ProgressReporter.rateText(moved: 10 << 20, elapsed: 2, remaining: 50 << 20) == "5.00 MiB/s  10 s left")
        #expect(ProgressReporter.rateText(moved: 1, elapsed: 0.1, remaining: 5) == nil, "nothing to go on yet")
        #expect(ProgressReporter.durationText(200) == "3 min 20 s")
        #expect(ProgressReporter.durationText(7500) == "2 h 5 min")
        let io = CapturedIO(isTerminal: true)
        let progress = ProgressReporter(io: io, label: "uploading")
        progress.update(0, 100)
        progress.update(40, 100)
        progress.complete()
        #expect(io.standardError.contains("100%"), "complete() draws the end: \(io.standardError)")
        // Work that ended before its first report was seen (fetch stops its watcher when the
        // install returns): given the total, the bar is drawn once, whole.
        let quick = CapturedIO(isTerminal: true)
        ProgressReporter(io: quick, label: "fetching").complete(total: 3 << 20)
        #expect(
            quick.standardError.contains("fetching [") && quick.standardError.contains("100%  3.00 MiB / 3.00 MiB"),
            "\(quick.standardError)")
        let nothing = CapturedIO(isTerminal: true)
        ProgressReporter(io: nothing, label: "fetching").complete()
        #expect(nothing.standardError.isEmpty, "nothing done, no total: no bar")
    }

    @Test func durationsSpellMinutesHoursAndDays() {
        #expect(ExpiryDuration(argument: "90m")?.seconds == 5400)
        #expect(ExpiryDuration(argument: "12h")?.seconds == 43_200)
        #expect(ExpiryDuration(argument: "30d")?.seconds == 2_592_000)
        for bad in ["30", "d", "-1d", "59s", "4000d", "99999999999999999999d", "1.5h"] {
            #expect(ExpiryDuration(argument: bad) == nil, "\(bad)")
        }
    }

    @Test func serverOptionsComeFromFlagsThenTheEnvironmentThenTheProfile() throws {
        let s = try ServedRepository("cli-profiles")
        defer { s.stop() }
        #expect(
            run(["apps", "create", "com.example.game", "--server", s.server.baseURL, "--ca", s.ca, "--token", s.admin])
                .status == 0)
        let environment = ["BACKLOT_SERVER": s.server.baseURL, "BACKLOT_CA": s.ca, "BACKLOT_TOKEN": s.admin]
        let listed = run(["apps", "list", "--json"], environment: environment)
        #expect(listed.status == 0, "\(listed.err)")
        #expect(listed.out.contains("\"app\": \"com.example.game\""), "\(listed.out)")

        // The flag wins over the environment: a wrong token in the environment is not used.
        var wrong = environment
        wrong["BACKLOT_TOKEN"] = "blt_wrongwrongwrongwrong"
        #expect(run(["apps", "list"], environment: wrong).status != 0)
        #expect(run(["apps", "list", "--token", s.admin], environment: wrong).status == 0)

        // A profile file with a default and a named profile.
        let config = s.dir.at("config")
        try FileSystem.makeDirectory(config)
        try FileSystem.makeDirectory(config + "/backlot")
        let tokenFile = try s.dir.write("admin.token", s.admin + "\n", mode: 0o600)
        _ = try s.dir.write(
            "config/backlot/config.json",
            """
            {"default": "local",
             "profiles": {"local": {"server": "\(s.server.baseURL)", "ca": "\(s.ca)", "tokenFile": "\(tokenFile)"},
                          "broken": {"server": "https://127.0.0.1:1", "ca": "\(s.ca)", "token": "blt_brokenbrokenbroken"}}}
            """, mode: 0o600)
        let profileOnly = ["XDG_CONFIG_HOME": config]
        let viaDefault = run(["apps", "list"], environment: profileOnly)
        #expect(viaDefault.status == 0 && viaDefault.out.contains("com.example.game"), "\(viaDefault.err)")
        let broken = run(["apps", "list", "--profile", "broken"], environment: profileOnly)
        #expect(
            broken.status != 0 && !broken.err.contains("blt_brokenbrokenbroken"),
            "a token never shows in an error: \(broken.err)")
        // The environment wins over the profile.
        var mixed = profileOnly
        mixed["BACKLOT_SERVER"] = s.server.baseURL
        mixed["BACKLOT_TOKEN"] = s.admin
        #expect(run(["apps", "list", "--profile", "broken"], environment: mixed).status == 0)
        let unknown = run(["apps", "list", "--profile", "locl"], environment: profileOnly)
        #expect(
            unknown.status == 2 && unknown.err.contains("there is no profile locl")
                && unknown.err.contains("did you mean local?"), "\(unknown.err)")
        #expect(run(["apps", "list", "--profile", "local"]).err.contains("there is no profile file"))

        // A profile file holding a token that others may read is refused.
        chmod(config + "/backlot/config.json", 0o644)
        let open = run(["apps", "list", "--profile", "broken"], environment: profileOnly)
        #expect(open.status == 2 && open.err.contains("others may read it"), "\(open.err)")
    }

    @Test func aTokenFileMustBePrivateAndStandardInputWorks() throws {
        let s = try ServedRepository("cli-token-file")
        defer { s.stop() }
        let remote = ["--server", s.server.baseURL, "--ca", s.ca]
        let open = try s.dir.write("open.token", s.admin, mode: 0o644)
        let refused = run(["apps", "list", "--token-file", open] + remote)
        #expect(
            refused.status == 2 && refused.err.contains("chmod 600") && !refused.err.contains(s.admin), "\(refused.err)"
        )
        let closed = try s.dir.write("closed.token", s.admin + "\n", mode: 0o600)
        #expect(run(["apps", "list", "--token-file", closed] + remote).status == 0)
        let piped = run(["apps", "list", "--token-file", "-"] + remote, stdin: Array((s.admin + "\n").utf8))
        #expect(piped.status == 0, "\(piped.err)")
        #expect(run(["apps", "list", "--token-file", closed, "--token", s.admin] + remote).err.contains("not both"))
        let spaced = run(["apps", "list", "--token-file", "-"] + remote, stdin: Array("blt_secret part\n".utf8))
        #expect(spaced.status == 2 && !spaced.err.contains("blt_secret"), "\(spaced.err)")
    }
}

/// The command table itself: every command answers --help, its options are declared once, and
/// every command that reports something takes --json.
@Suite struct CommandTableTests {
    @Test func everyCommandHasHelpAndUniqueOptions() {
        for command in BacklotCLI.commands {
            let spec = command.spec
            let names = spec.infos.map(\.name)
            let shorts = spec.infos.compactMap(\.short)
            #expect(Set(names).count == names.count, "\(spec.name) declares an option twice: \(names)")
            #expect(Set(shorts).count == shorts.count, "\(spec.name) declares a short option twice")
            let io = CapturedIO()
            #expect(BacklotCLI.main(spec.name.split(separator: " ").map(String.init) + ["--help"], io: io) == 0)
            #expect(io.standardOutput.contains("Usage: backlot \(spec.name)"), "\(spec.name)")
        }
    }

    @Test func everyCommandThatReportsSomethingTakesJSON() {
        // What prints a manifest, a script, a log or a server's address has no JSON to give.
        let without: Set<String> = ["template", "serve", "agent", "completion"]
        for command in BacklotCLI.commands where !without.contains(command.spec.name) {
            #expect(command.spec.infos.contains { $0.name == "json" }, "\(command.spec.name) has no --json")
        }
    }
}
