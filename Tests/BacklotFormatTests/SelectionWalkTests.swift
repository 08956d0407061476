import BacklotBasics
import BacklotTestSupport
import Foundation
import Testing

@testable import BacklotFormat

/// The walk that lists a source tree, a level of folders at a time on several threads, and the
/// byte order its candidates are sorted in.
@Suite struct SelectionWalkTests {
    /// `byteOrder` is the order of the paths' bytes, ties in index order: the comparison of
    /// arrays it replaced, on random keys with shared prefixes, repeats and multi-byte characters.
    @Test func byteOrderIsTheOrderOfTheKeysBytesTiesByIndex() {
        var g = SeededGenerator.fromEnvironment()
        print("SelectionWalkTests.byteOrder seed: \(g.seed) (set BACKLOT_TEST_SEED to replay)")
        let pieces = ["a", "b", "/", ".", "é", "e\u{301}", "ab", "z/", "~"].map { Array($0.utf8) }
        for _ in 0..<50 {
            var keys: [[UInt8]] = []
            for _ in 0..<Int(g.next() % 200) + 1 {
                if !keys.isEmpty, g.next() % 5 == 0 {
                    keys.append(keys[Int(g.next() % UInt64(keys.count))])  // a repeat
                    continue
                }
                var key: [UInt8] = []
                for _ in 0..<Int(g.next() % 6) + 1 { key += pieces[Int(g.next() % UInt64(pieces.count))] }
                keys.append(key)
            }
            let expected = keys.indices.sorted { a, b in
                keys[a] == keys[b] ? a < b : keys[a].lexicographicallyPrecedes(keys[b])
            }
            #expect(SourceSelection.byteOrder(keys) == expected)
        }
        #expect(SourceSelection.byteOrder([]) == [])
    }

    /// A tree several folders wide at every level and four deep is selected whole, each file
    /// once, in path order, and the same way every time.
    @Test func aWideAndDeepTreeIsSelectedWholeInPathOrder() throws {
        let dir = try TemporaryDirectory("walk")
        defer { dir.remove() }
        var expected: [String] = []
        func fill(_ prefix: String, depth: Int) throws {
            for f in 0..<3 {
                let path = prefix + "f\(f).bin"
                _ = try dir.write("src/" + path, path)
                expected.append(path)
            }
            guard depth < 4 else { return }
            for d in 0..<4 { try fill(prefix + "d\(d)/", depth: depth + 1) }
        }
        try fill("", depth: 1)
        _ = try dir.write("src/d0.bin", "beside the folder d0, before it in byte order")
        expected.append("d0.bin")
        let manifestPath = try dir.write(
            "M.json",
            #"{"assetPackID":"Wide","downloadPolicy":{"onDemand":{}},"fileSelectors":[{"directory":"."}],"platforms":["linux"]}"#
        )
        let (manifest, _) = try PackManifest.load(path: manifestPath)
        let first = try SourceSelection(manifest: manifest, sourceRoot: dir.at("src"))
        let paths = first.files.map(\.packPath)
        #expect(paths == expected.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) })
        #expect(paths.count == 3 * (1 + 4 + 16 + 64) + 1)
        #expect(first.files.allSatisfy { $0.size == UInt64($0.packPath == "d0.bin" ? 45 : $0.packPath.utf8.count) })
        let again = try SourceSelection(manifest: manifest, sourceRoot: dir.at("src"))
        #expect(again.files.map(\.packPath) == paths)
    }
}
