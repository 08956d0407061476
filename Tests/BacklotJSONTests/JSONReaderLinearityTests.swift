import Testing

@testable import BacklotJSON

/// Reading is linear in the text, even on one long line (an extension's reply, a configuration
/// written by a program): positions are computed from the previous one, never by rescanning the
/// line. Counted in bytes examined, not in seconds.
@Suite struct JSONReaderLinearityTests {
    func oneLine(ids: Int) -> String {
        "[" + (0..<ids).map { "\"com.example.pack\($0)\"" }.joined(separator: ",") + "]"
    }

    @Test func positionsOnOneLongLineCostLinearWork() throws {
        let small = try JSONReader(source: "s").read(oneLine(ids: 8_000))
        let large = try JSONReader(source: "l").read(oneLine(ids: 80_000))
        #expect(large.root.arrayElements?.count == 80_000)
        let ratio = Double(large.positionBytesScanned) / Double(max(1, small.positionBytesScanned))
        // 10× the input is about 10× the work (a rescan per value would be about 100×).
        #expect(ratio < 12, "10× input cost \(ratio)× the position work")
        #expect(large.positionBytesScanned <= oneLine(ids: 80_000).utf8.count * 2)
    }

    @Test func positionsStayExactAfterTheChange() throws {
        let text = "{\"a\": 1,\n  \"é\": [1, 2,\n   x]}"
        do {
            _ = try JSONReader(source: "t").read(text)
            Issue.record("accepted bad JSON")
        } catch {
            #expect("\(error)".contains("t:3:4"), "\(error)")
        }
        let result = try JSONReader(source: "t").read("[1,\n 2, \"é\", 3]")
        let third = try #require(result.root.arrayElements?[3])
        #expect(third.position == JSONPosition(line: 2, column: 10))
    }
}
