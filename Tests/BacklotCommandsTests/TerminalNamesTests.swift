import BacklotBasics
import BacklotCommands
import BacklotCrypto
import BacklotFormat
import BacklotTestSupport
import Foundation
import Testing

/// Names from a pack reach the operator's terminal quoted and escaped, never as control
/// sequences; `--json` keeps their exact characters.
@Suite struct TerminalNamesTests {
    func run(_ args: [String]) -> (status: Int32, out: String, err: String) {
        let io = CapturedIO()
        let status = BacklotCLI.main(args, io: io)
        return (status, io.standardOutput, io.standardError)
    }

    /// Names a terminal would obey: a title change and a bell, a line that fakes another, a
    /// carriage return that overwrites, a right-to-left override, a zero-width joiner.
    static let hostile = [
        "a\u{1B}]0;owned\u{07}.txt", "b\nOK every file is intact", "c\rOVERWRITTEN", "d\u{202E}txt.exe",
        "e\u{200D}.txt",
    ]

    @Test func inspectFilesAndErrorsShowHostileNamesEscaped() throws {
        let dir = try TemporaryDirectory("terminal-names")
        defer { dir.remove() }
        let pack = try CraftedPack(
            files: Self.hostile.map { .init(path: $0, bytes: Array($0.utf8)) } + [.init(path: "plain.txt", bytes: [1])])
        try pack.write(to: dir.at("names.pack"))
        let listed = run(["inspect", "--files", dir.at("names.pack")])
        #expect(listed.status == 0, "\(listed.err)")
        for bad in ["\u{1B}", "\u{07}", "\r", "\u{202E}", "\u{200D}", "\nOK every"] {
            #expect(!listed.out.contains(bad), "inspect --files printed \(bad.debugDescription) raw")
        }
        for shown in [
            #""a\x1B]0;owned\x07.txt""#, #""b\nOK every file is intact""#, #""c\rOVERWRITTEN""#, #""d\u{202E}txt.exe""#,
            #""e\u{200D}.txt""#, "  plain.txt\n",
        ] {
            #expect(listed.out.contains(shown), "inspect --files does not show \(shown): \(listed.out)")
        }
        // --json gives the exact names.
        let json = run(["inspect", "--json", dir.at("names.pack")])
        let files = try JSONDecoder().decode(Listing.self, from: Data(json.out.utf8)).files.map(\.path)
        #expect(Set(files) == Set(Self.hostile + ["plain.txt"]))

        // An error that quotes a name (here a file's wrong digest) shows it escaped too.
        let wrong = try CraftedPack(files: [
            .init(
                path: "x\u{1B}[2Jy", bytes: [UInt8](repeating: 7, count: 100_000),
                digest: SHA256Digest(bytes: [UInt8](repeating: 0, count: 32)))
        ])
        try wrong.write(to: dir.at("wrong.pack"))
        let verify = run(["verify", dir.at("wrong.pack")])
        #expect(verify.status != 0)
        #expect(!verify.err.contains("\u{1B}") && verify.err.contains(#"x\x1B[2Jy"#), "\(verify.err)")
    }

    struct Listing: Decodable {
        struct File: Decodable { let path: String }
        let files: [File]
    }
}
