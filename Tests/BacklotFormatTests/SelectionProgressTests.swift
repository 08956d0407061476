import BacklotBasics
import BacklotTestSupport
import Foundation
import Testing

@testable import BacklotFormat

/// Listing a large tree says how many files it found as it goes (every 10,000), so `package` on a
/// million files shows that it works; the count is of files, not folders.
@Suite struct SelectionProgressTests {
    @Test func theWalkReportsFilesFoundAsItGoes() throws {
        let dir = try TemporaryDirectory("selection-progress")
        defer { dir.remove() }
        let files = 2 * SourceSelection.foundReportInterval + 1
        for folder in 0..<10 {
            try FileManager.default.createDirectory(atPath: dir.at("src/d\(folder)"), withIntermediateDirectories: true)
        }
        for i in 0..<files { _ = FileManager.default.createFile(atPath: dir.at("src/d\(i % 10)/f\(i)"), contents: nil) }
        let manifestPath = try dir.write(
            "M.json",
            #"{"assetPackID":"Many","downloadPolicy":{"onDemand":{}},"fileSelectors":[{"directory":"."}],"platforms":["linux"]}"#
        )
        let (manifest, _) = try PackManifest.load(path: manifestPath)
        var reports: [Int] = []
        let selection = try SourceSelection(manifest: manifest, sourceRoot: dir.at("src")) { reports.append($0) }
        #expect(reports == [SourceSelection.foundReportInterval, 2 * SourceSelection.foundReportInterval])
        #expect(selection.files.count == files)
    }
}
