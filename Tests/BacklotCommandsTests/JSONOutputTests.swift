import BacklotBasics
import BacklotClient
import BacklotTestSupport
import Foundation
import Testing

@testable import BacklotCommands

/// What docs/json.md promises of `--json` (issue #34): keys sorted in every object (`diff` and
/// `fetch` too), and on success only the JSON document on standard output: no progress line on
/// standard error, even for a transfer large enough to print plain progress lines otherwise.
@Suite(.serialized) struct JSONOutputTests {
    /// The keys of every object in `text` (the house layout: one member a line), in their order,
    /// by the object they belong to (its indentation and position).
    static func keyOrders(_ text: String) -> [[String]] {
        var open: [[String]] = []
        var done: [[String]] = []
        for line in text.split(separator: "\n", omittingEmptySubsequences: true) {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.hasPrefix("\""), let end = trimmed.dropFirst().firstIndex(of: "\""),
                trimmed[trimmed.index(after: end)...].hasPrefix(":")
            {
                open[open.count - 1].append(String(trimmed[trimmed.index(after: trimmed.startIndex)..<end]))
            }
            if trimmed.hasSuffix("{") { open.append([]) }
            if trimmed.hasPrefix("}") { done.append(open.removeLast()) }
        }
        return done + open
    }

    @Test func keyOrdersReadsNestedObjects() {
        let orders = Self.keyOrders(
            "{\n  \"b\": 1,\n  \"list\": [\n    {\n      \"z\": 1,\n      \"a\": 2\n    }\n  ]\n}\n")
        #expect(orders == [["z", "a"], ["b", "list"]])
    }

    @Test func diffJSONKeysAreSorted() throws {
        let dir = try TemporaryDirectory("json-diff")
        defer { dir.remove() }
        try SamplePack.writeTree(in: dir, seed: 1)
        let v1 = try SamplePack.build(in: dir, manifestJSON: SamplePack.manifest(id: "Levels"), name: "v1.pack")
        try SamplePack.writeTree(in: dir, seed: 2)
        let v2 = try SamplePack.build(in: dir, manifestJSON: SamplePack.manifest(id: "Levels"), name: "v2.pack")
        let io = CapturedIO()
        #expect(BacklotCLI.main(["diff", v1, v2, "--json"], io: io) == 0, "\(io.standardError)")
        #expect(io.standardError.isEmpty, "\(io.standardError)")
        let orders = Self.keyOrders(io.standardOutput)
        #expect(orders.count == 1, "\(io.standardOutput)")
        let keys = try #require(orders.first)
        #expect(keys == keys.sorted(), "diff --json keys out of order: \(keys)")
        // The keys docs/json.md lists for diff, no more and no fewer.
        #expect(
            Set(keys) == [
                "downloadBytes", "downloadChunkCount", "newPackBytes", "reusedChunkCount", "reusedBytes",
                "metadataBytes", "rangeRequestCount", "changedFileCount", "removedFileCount", "unchangedFileCount",
                "deltaDownloadBytes", "deltaBytes", "deltaChunkCount", "deltaWholeChunkCount", "deltaRangeRequestCount",
            ])
    }

    @Test func fetchJSONKeysAreSorted() throws {
        // Two packs as fetch reports them (the report is Codable: made from its JSON here).
        let reports = try JSONDecoder().decode(
            [AssetPackManager.FetchReport].self,
            from: Data(
                #"""
                [{"id": "Levels", "version": 2, "downloadedBytes": 4096, "downloadedChunks": 3, "reusedChunks": 9, "linkedFiles": 1},
                 {"id": "Music", "version": 1, "downloadedBytes": 0, "downloadedChunks": 0, "reusedChunks": 0, "linkedFiles": 0}]
                """#.utf8))
        let text = try CommandJSON.text(FetchOutput(reports, deltas: [nil, nil]))
        let orders = Self.keyOrders(text)
        #expect(orders.count == 3, "\(text)")
        for keys in orders { #expect(keys == keys.sorted(), "fetch --json keys out of order: \(keys)") }
        #expect(
            orders.first.map(Set.init) == [
                "pack", "version", "downloadedBytes", "downloadedChunkCount", "reusedChunkCount", "linkedFileCount",
                "deltaBytes", "deltaChunkCount", "peerBytes", "peerChunkCount", "bannedPeers",
            ])
        #expect(orders.last == ["packs"])
    }

    /// `backlot package --json` of 80 MB: past the size where plain progress lines are printed
    /// when standard error is not a terminal; under --json, none is.
    @Test func progressLinesStayOffStandardErrorUnderJSON() throws {
        let dir = try TemporaryDirectory("json-progress")
        defer { dir.remove() }
        try FileManager.default.createDirectory(atPath: dir.at("src/Big"), withIntermediateDirectories: true)
        var generator = SeededGenerator(seed: 34)
        try dir.write("src/Big/blob.bin", generator.bytes(80_000_000))
        try dir.write(
            "M.json",
            #"{ "assetPackID": "Big", "fileSelectors": [{ "directory": "Big" }], "platforms": ["linux"], "downloadPolicy": { "onDemand": {} } }"#
        )
        #expect(80_000_000 > ProgressReporter.plainLineThreshold)
        // Without --json, on a pipe: plain progress lines on standard error.
        let plain = CapturedIO()
        #expect(
            BacklotCLI.main(
                ["package", dir.at("M.json"), "--source-root", dir.at("src"), "-o", dir.at("plain.pack")], io: plain)
                == 0, "\(plain.standardError)")
        #expect(plain.standardError.contains("packaging: "), "the control: \(plain.standardError)")
        // With --json, on a pipe and on a terminal: the document alone.
        for terminal in [false, true] {
            let io = CapturedIO(isTerminal: terminal)
            #expect(
                BacklotCLI.main(
                    [
                        "package", dir.at("M.json"), "--source-root", dir.at("src"), "-o", dir.at("json.pack"),
                        "--force", "--json",
                    ],
                    io: io) == 0, "\(io.standardError)")
            #expect(io.standardError.isEmpty, "terminal \(terminal): \(io.standardError)")
            #expect(io.standardOutput.hasPrefix("{") && io.standardOutput.hasSuffix("}\n"), "\(io.standardOutput)")
        }
        // The reporter itself, under --json: nothing, even at 100 %.
        let base = CapturedIO(isTerminal: true)
        let progress = ProgressReporter(io: LineTrackingIO(base, json: true), label: "uploading")
        progress.update(0, 128 << 20)
        progress.update(70 << 20, 128 << 20)
        progress.complete()
        #expect(base.standardError.isEmpty, "\(base.standardError)")
    }
}
