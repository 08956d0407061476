import BacklotBasics
import Testing

@testable import BacklotJSON

struct JSONReaderTests {
    let reader = JSONReader(source: "test.json")

    @Test func readsLineAndBlockCommentsAnywhereWhitespaceMayBe() throws {
        let text = """
            // Asset pack manifest
            { /* before a key */ "a": 1, // after a value
              "b": [ /* only a comment */ ],
              "c": "x" /* before the end */ }
            """
        let root = try reader.read(text).root
        #expect(root["a"]?.kind == .number("1"))
        #expect(root["b"]?.arrayElements == [])
        #expect(root["c"]?.stringValue == "x")
    }

    @Test func neverStripsCommentMarkersInsideStrings() throws {
        let root = try reader.read(#"{"path": "a//b/*c*/d", "url": "https://x/y"}"#).root
        #expect(root["path"]?.stringValue == "a//b/*c*/d")
        #expect(root["url"]?.stringValue == "https://x/y")
    }

    @Test func acceptsTrailingCommasWithAWarningThatNamesThePosition() throws {
        let result = try reader.read("{\n  \"a\": [1, 2,],\n}")
        #expect(result.warnings.count == 2)
        #expect(result.warnings[0].position == JSONPosition(line: 2, column: 13))
        #expect(result.warnings[1].position == JSONPosition(line: 2, column: 15))
    }

    @Test func strictModeRefusesCommentsAndTrailingCommas() {
        let strict = JSONReader(source: "s", allowsComments: false, allowsTrailingCommas: false)
        #expect(throws: BacklotError.self) { try strict.read("{} // x") }
        #expect(throws: BacklotError.self) { try strict.read("[1,]") }
    }

    @Test func decodesEscapesIncludingEscapedSlashesAndSurrogatePairs() throws {
        let root = try reader.read(#"{"p": "Videos\/a.m4v", "e": "\ud83d\ude00 \u00e9\n\t\"\\"}"#).root
        #expect(root["p"]?.stringValue == "Videos/a.m4v")
        #expect(root["e"]?.stringValue == "😀 é\n\t\"\\")
    }

    @Test func keepsNumbersAndMemberOrderVerbatim() throws {
        let text = #"{"z":1.50,"a":-0.0e+10,"m":[true,false,null]}"#
        let root = try reader.read(text).root
        #expect(root.serialized() == text)
        #expect(root.serialized(sortedKeys: true) == #"{"a":-0.0e+10,"m":[true,false,null],"z":1.50}"#)
    }

    @Test func acceptsTabsAnyIndentationAndSpaceBeforeColon() throws {
        let root = try reader.read("{\n\t\"a\" : 1 ,\r\n   \"b\"\t:\t2}").root
        #expect(root["b"]?.kind == .number("2"))
    }

    @Test(arguments: [
        ("{\"a\": 1\n \"b\": 2}", 2, 2, "expected ',' or '}'"),
        ("{\"a\": \"unterminated\n}", 1, 20, "never closed on its line"),
        ("{\"a\": 1, \"a\": 2}", 1, 10, "appears twice"),
        ("[1, 2", 1, 6, "never closed"),
        ("{'a': 1}", 1, 2, "double quotes"),
        ("{\"a\": 01}", 1, 8, "leading zeros"),
        ("{\"a\": tru}", 1, 7, "expected a value"),
        ("/* open", 1, 1, "never closed"),
        ("{} {}", 1, 4, "after the end"),
        ("{\"a\": \"\\q\"}", 1, 8, "not a JSON escape"),
    ])
    func syntaxErrorsNameLineAndColumn(text: String, line: Int, column: Int, phrase: String) {
        do {
            _ = try reader.read(text)
            Issue.record("expected an error for \(text)")
        } catch let error as BacklotError {
            #expect(error.code == .invalidJSON)
            #expect(error.context == "test.json:\(line):\(column)", "\(error)")
            #expect(error.message.contains(phrase), "\(error.message)")
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    @Test func invalidUTF8IsReportedWhereItIs() {
        var bytes = Array("{\n  \"a\": \"".utf8)
        bytes += [0xFF, 0x22, 0x7D]
        #expect {
            try reader.read(bytes)
        } throws: { error in
            (error as? BacklotError)?.context == "test.json:2:9"
        }
    }

    @Test func deepNestingIsRefusedInsteadOfOverflowingTheStack() {
        let text = String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)
        #expect(throws: BacklotError.self) { try reader.read(text) }
    }

    @Test func columnsCountCharactersNotBytes() throws {
        // "é" is two bytes; the error column counts it as one character.
        do {
            _ = try reader.read("{\"é\": 1 \"x\"}")
        } catch let error as BacklotError {
            #expect(error.context == "test.json:1:9")
        }
    }
}

/// The reader's value budget: memory follows a bound, not the number of values a text declares.
@Suite struct JSONValueBudgetTests {
    @Test func aTextOfMoreValuesThanTheBudgetIsRefusedNamingIt() throws {
        let reader = JSONReader(source: "t.json", maximumValues: 10)
        // Nine elements and the array: ten values.
        #expect(try reader.read("[0,1,2,3,4,5,6,7,[]]").root.arrayElements?.count == 9)
        #expect {
            try reader.read("[0,1,2,3,4,5,6,7,8,9]")
        } throws: { e in
            let e = e as? BacklotError
            return e?.code == .invalidJSON && e?.message.contains("more than 10 values") == true
                && e?.context == "t.json:1:20"
        }
        // Keys are not values; members' values are.
        #expect(throws: Never.self) { try reader.read(#"{"a":0,"b":1,"c":[2,3,4,5,6,7]}"#) }
    }

    @Test func theDefaultBudgetHoldsAMillionValues() throws {
        let text = "[" + String(repeating: "0,", count: JSONReader.standardMaximumValues - 2) + "0]"
        #expect(
            try JSONReader(source: "t").read(text).root.arrayElements?.count == JSONReader.standardMaximumValues - 1)
        #expect(throws: BacklotError.self) { try JSONReader(source: "t").read("[0," + text.dropFirst()) }
    }
}
