import BacklotBasics
import BacklotJSON
import BacklotTestSupport
import Foundation
import Testing

@testable import BacklotCommands

/// `--json` output is laid out in one pass over `JSONEncoder`'s bytes; it must be exactly what
/// the house printer makes of the same value (encoded, read back and printed: the old way, here
/// the oracle).
@Suite struct CommandJSONLayoutTests {
    func oracle(_ value: some Encodable) throws -> String {
        try JSONReader(source: "oracle").read(try CommandJSON.line(value)).root.prettyPrinted() + "\n"
    }

    struct Mixed: Encodable {
        var empty: [Int] = []
        var none: [String: Int] = [:]
        var text = "x\u{8}y\u{c}z\u{1}\n\t\r\"/\\é 中 🙂 : [] {}"
        var nested: [[Int]] = [[1, 2], [], [3]]
        var small = 1e-7
        var large = 123_456_789_012_345_678.0
        var flag = true
        @NullWhenAbsent var missing: String? = nil
        var objects: [[String: [String]]] = [[:], ["a": []], ["b": ["c"]]]
    }

    @Test func aValueOfEveryShapeIsLaidOutAsTheHousePrinterDoes() throws {
        #expect(try CommandJSON.text(Mixed()) == oracle(Mixed()))
        #expect(try CommandJSON.text([Int]()) == "[]\n")
        #expect(try CommandJSON.text(["k": [String: Int]()]) == "{\n  \"k\": {}\n}\n")
    }

    @Test func seededTreesAreLaidOutAsTheHousePrinterDoes() throws {
        let seed = UInt64.random(in: 0...UInt64.max)
        print("CommandJSONLayoutTests seed: \(seed)")
        var g = SeededGenerator(seed: seed)
        func string() -> String {
            let pieces = ["a", " : ", "\u{8}", "\u{c}", "\\", "\"", "\n", "é", "[", "{}", "\u{1f}", "/"]
            return (0..<Int(g.next() % 6)).map { _ in pieces[Int(g.next() % UInt64(pieces.count))] }.joined()
        }
        func tree(_ depth: Int) -> JSONNode {
            switch g.next() % (depth > 3 ? 4 : 6) {
            case 0: return .string(string())
            case 1: return JSONNode(.number(String(Int64(bitPattern: g.next()) >> Int(g.next() % 60))))
            case 2: return JSONNode(.bool(g.next() % 2 == 0))
            case 3: return JSONNode(.null)
            case 4: return .array((0..<Int(g.next() % 4)).map { _ in tree(depth + 1) })
            default:
                let keys = Set((0..<Int(g.next() % 4)).map { _ in string() })
                return JSONNode(.object(keys.sorted().map { JSONMember(key: $0, value: tree(depth + 1)) }))
            }
        }
        for _ in 0..<300 {
            let value = ["tree": tree(0)]
            #expect(try CommandJSON.text(value) == oracle(value), "seed \(seed)")
        }
    }
}
