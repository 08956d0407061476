import Testing

@testable import BacklotInfoPlist

/// An XML property list of many elements reads in linear time: counted in elements copied and
/// bytes scanned, never in seconds.
@Suite struct PropertyListLinearityTests {
    func plist(_ n: Int) -> [UInt8] {
        Array(
            ("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<plist version=\"1.0\"><dict><key>ids</key><array>"
                + (0..<n).map { "<string>com.example.pack\($0)</string>" }.joined() + "</array></dict></plist>\n").utf8)
    }

    @Test func tenTimesTheElementsIsAboutTenTimesTheWork() throws {
        let small = try XMLPlistParser.parseCounting(plist(8_000), source: "s")
        let large = try XMLPlistParser.parseCounting(plist(80_000), source: "l")
        #expect(large.root.dictionary?["ids"]?.array?.count == 80_000)
        let copies = Double(large.copiedElements) / Double(max(1, small.copiedElements))
        let scanned = Double(large.scannedBytes) / Double(max(1, small.scannedBytes))
        // A copy of the whole array per append would be about 100× (and 3.2 billion elements).
        #expect(
            copies < 25, "10× the elements copied \(copies)× as many (arrays grow by doubling: at most about 2n copies)"
        )
        #expect(large.copiedElements < 4 * 80_000)
        #expect(scanned < 11)
    }
}
