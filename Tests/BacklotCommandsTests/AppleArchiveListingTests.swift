import BacklotAppleArchive
import BacklotBasics
import BacklotTestSupport
import Foundation
import Testing

@testable import BacklotCommands

/// `inspect --files` and `inspect --json` of an `.aar` keep at most a budget of listing in
/// memory: past it they read the archive again and print each entry as it comes. Both ways print
/// the same bytes, and the JSON is what one encoding of the whole document gives.
@Suite struct AppleArchiveListingTests {
    @Test func aListingPastItsBudgetIsReadAgainAndPrintsTheSameBytes() throws {
        let dir = try TemporaryDirectory("aar-listing")
        defer { dir.remove() }
        // Enough entries for more than one batch of the printed listing (256 KiB of JSON).
        for i in 0..<2_000 { try dir.write("src/Folder\(i % 7)/file-\(i).txt", "file \(i)\n") }
        try dir.write("src/ \u{1B}odd name.txt", "a name that is quoted\n")
        let manifest = try dir.write(
            "m.json",
            #"{"assetPackID": "Listing", "downloadPolicy": {"onDemand": {}}, "platforms": ["iOS"], "sourceRoot": "src", "fileSelectors": [{"directory": "."}]}"#
        )
        // A name that holds what the streamed JSON looks for, escaped in the document.
        let aar = dir.at("a \"listing\"\n  \"entries\": []\\.aar")
        let packaged = CapturedIO()
        #expect(BacklotCLI.main(["package", manifest, "--format", "aar", "-o", aar], io: packaged) == 0)

        func inspect(files: Bool, json: Bool, budget: Int) throws -> String {
            let io = CapturedIO()
            try AppleArchiveCommands.inspect(aar, files: files, json: json, io: io, listingBudget: budget)
            return io.standardOutput
        }
        // Kept in memory (the default budget), and read again (no budget, or a few entries' worth).
        for (files, json) in [(true, false), (false, true)] {
            let kept = try inspect(files: files, json: json, budget: 16 << 20)
            #expect(kept.contains("file-1999.txt") && (!json || kept.utf8.count > 256 << 10))
            for budget in [0, 500] { #expect(try inspect(files: files, json: json, budget: budget) == kept) }
        }
        #expect(try inspect(files: true, json: false, budget: 0).contains(#"/ \x1Bodd name.txt""#))

        // The streamed JSON is the whole document's one encoding.
        var entries: [AppleArchiveCommands.InspectOutput.Entry] = []
        let summary = try AppleArchiveCommands.reader(aar).readAll { entry in
            entries.append(
                .init(
                    type: entry.kind.name, path: entry.path, bytes: entry.dataSize,
                    mode: entry.mode.map { String($0, radix: 8) }, fields: entry.fields, link: entry.linkTarget))
            return nil
        }
        #expect(entries.count == summary.entryCount && summary.files == 2_001 && summary.directories >= 7)
        let whole = try CommandJSON.text(
            AppleArchiveCommands.InspectOutput(
                format: "aar", path: aar, archiveBytes: try AppleArchiveFile(path: aar).size,
                compression: summary.compression, blockSize: summary.blockSize, blockCount: summary.blocks,
                plainBytes: summary.plainSize, installBytes: summary.installSize, entryCount: summary.entryCount,
                fileCount: summary.files, entries: entries))
        #expect(try inspect(files: false, json: true, budget: 0) == whole)
    }
}
