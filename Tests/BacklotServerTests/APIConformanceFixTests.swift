import BacklotBasics
import BacklotJSON
import BacklotProtocol
import BacklotRepository
import BacklotTestSupport
import Foundation
import Testing

@testable import BacklotServer

/// What schemathesis (scripts/api-conformance) found the server and its OpenAPI document
/// disagreeing on, each now agreeing: whole numbers written `3621.0`, percentages of any number of
/// decimals (rounded down to the basis point), null for an optional field, the display-text rule
/// as a pattern, and 409 (not 404) for an existing pack that is not on the channel or a pack or
/// version named in a body that the app does not have.
@Suite(.serialized) struct APIConformanceFixTests {
    typealias Fixture = ManagementAPITests.Fixture

    static func body(_ json: String) throws -> Body {
        Body(
            root: try JSONReader(source: "request body", allowsComments: false, allowsTrailingCommas: false)
                .read(Array(json.utf8)).root)
    }

    /// A body of one field, read as the server reads a member of an endpoint's body type
    /// (``RequestBodyDecoder``), then held to the route's range.
    struct Body {
        let root: JSONNode

        /// The body's one member, whatever its name, as `T` (nil: absent or null).
        struct Field<T: Decodable>: Decodable {
            struct Key: CodingKey {
                let stringValue: String
                var intValue: Int? { nil }
                init?(stringValue: String) { self.stringValue = stringValue }
                init?(intValue: Int) { nil }
            }
            let value: T?
            init(from decoder: any Decoder) throws {
                let c = try decoder.container(keyedBy: Key.self)
                value = try c.allKeys.first.flatMap { try c.decodeIfPresent(T.self, forKey: $0) }
            }
        }

        func integer<T: FixedWidthInteger & Decodable>(
            _ key: String, as type: T.Type, in range: ClosedRange<T>
        ) throws
            -> T
        {
            guard let value = try RequestBodyDecoder.decode(Field<T>.self, from: root).value else {
                throw BacklotError(.invalidInput, "\"\(key)\" is missing", context: "request body")
            }
            return try CheckedInteger.convert(value, to: T.self, "\"\(key)\"", in: range, context: "request body")
        }

        func percent(_ key: String, allowingZero: Bool = false) throws -> Double? {
            guard let share = try RequestBodyDecoder.decode(Field<API.RolloutShare>.self, from: root).value else {
                return nil
            }
            if share.basisPoints == 0 && !allowingZero { throw API.RolloutShare.outOfRange(key, allowingZero: false) }
            return share.percent
        }
    }

    // MARK: whole numbers

    @Test func aWholeNumberMayBeWrittenWithAFractionOfZeros() throws {
        let accepted: [(String, Int64)] = [
            ("3621", 3621), ("3621.0", 3621), ("3621.000", 3621), ("1048443.0", 1_048_443), ("60.0", 60),
            ("9223372036854775807.0", Int64.max), ("100.00000000000000000000000000", 100),
        ]
        for (text, value) in accepted {
            let n = try Self.body("{\"n\":\(text)}").integer("n", as: Int64.self, in: 1...Int64.max)
            #expect(n == value, "\(text)")
        }
        // -0.0 and 0.0 are zero.
        #expect(try Self.body(#"{"n":-0.0}"#).integer("n", as: UInt64.self, in: 0...10) == 0)
    }

    @Test func realFractionsExponentsAndValuesOutOfRangeAreStillA400() throws {
        let refused = [
            "1.5", "3621.01", "3621.0000000000000000001", "1e3", "1E+2", "3621.0e0", "-1.0", "0.0",
            "9223372036854775808.0", "18446744073709551616.000", "-9223372036854775809.0",
            "1" + String(repeating: "0", count: 60) + ".0", "0." + String(repeating: "0", count: 60_000) + "1",
            "\"3621\"", "null", "true", "[1]",
        ]
        for text in refused {
            #expect(throws: BacklotError.self, "\(text.prefix(40))") {
                _ = try Self.body("{\"n\":\(text)}").integer("n", as: Int64.self, in: 1...Int64.max)
            }
        }
        // Unsigned: a negative whole number is outside, not a trap.
        #expect(throws: BacklotError.self) {
            _ = try Self.body(#"{"n":-5.0}"#).integer("n", as: UInt64.self, in: 1...UInt64.max)
        }
        do {
            _ = try Self.body(#"{"version":18446744073709551615.0}"#).integer("version", as: Int.self, in: 1...Int.max)
            Issue.record("accepted")
        } catch let e as BacklotError {
            #expect(e.message.contains("\"version\"") && e.message.contains("…\(Int.max)"), "\(e.message)")
        }
    }

    @Test func theAPIAcceptsWholeNumbersWrittenWithZeros() throws {
        let f = try Fixture()
        let token = try f.call(
            "POST", "/api/tokens", token: f.admin, json: #"{"role":"reader","expiresInSeconds":1048443.0}"#)
        #expect(token.status == 201, "\(token.text)")
        let fraction = try f.call(
            "POST", "/api/tokens", token: f.admin, json: #"{"role":"reader","expiresInSeconds":1048443.5}"#)
        #expect(fraction.status == 400 && fraction.text.contains("expiresInSeconds"), "\(fraction.text)")
        #expect(try f.call("POST", "/api/apps", token: f.admin, json: #"{"id":"a"}"#).status == 201)
        #expect(try f.call("POST", "/api/apps/a/packs", token: f.admin, json: #"{"id":"p"}"#).status == 201)
        let version = try f.call("POST", "/api/apps/a/packs/p/versions", token: f.admin, json: #"{"size":100.0}"#)
        #expect(version.status == 201 && version.text.contains("\"size\":100"), "\(version.text)")
        // A rollback to a version given as 1.0 is read as version 1 (409: it is not COMPLETE).
        let rollback = try f.call(
            "POST", "/api/apps/a/packs/p/rollback", token: f.admin, json: #"{"channel":"internal","version":1.0}"#)
        #expect(rollback.status == 409 && rollback.text.contains("AWAITING_UPLOAD"), "\(rollback.text)")
    }

    // MARK: percentages

    @Test func aPercentageIsRoundedDownToTheBasisPoint() throws {
        let cases: [(String, Double)] = [
            ("60.768267517971864", 60.76), ("99.999", 99.99), ("99.9999999999", 99.99), ("12.345", 12.34),
            ("0.29", 0.29), ("0.01", 0.01), ("0.019", 0.01), ("100", 100), ("100.0", 100), ("1e1", 10),
            ("5E-1", 0.5), ("2.5e+1", 25),
            // Its Double is 0.01 or 100 (what a JSON Schema validator compares), its exact value a
            // little outside: never below one basis point, never above 100 %.
            ("0.00999999999999999999", 0.01), ("100.00000000000000000001", 100),
        ]
        for (text, kept) in cases {
            let p = try Self.body("{\"p\":\(text)}").percent("p")
            #expect(p == kept, "\(text) → \(String(describing: p))")
            // What the repository stores: whole basis points, the same value back.
            #expect(p.map { Int(($0 * 100).rounded()) } == Int((kept * 100).rounded()), "\(text)")
        }
        #expect(try Self.body(#"{"p":null}"#).percent("p") == nil)
        #expect(try Self.body(#"{}"#).percent("p") == nil)
        for zero in ["0", "0.0", "-0.0", "1e-400"] {
            #expect(try Self.body("{\"p\":\(zero)}").percent("p", allowingZero: true) == 0, "\(zero)")
        }
    }

    @Test func aPercentageBelowOneBasisPointOrAbove100IsRefused() throws {
        for text in ["0.006", "0.0099", "0.001", "1e-3", "0", "-0.01", "100.01", "101", "1e999", "\"50\"", "true"] {
            #expect(throws: BacklotError.self, "\(text)") { _ = try Self.body("{\"p\":\(text)}").percent("p") }
        }
        for text in ["0.006", "0.0099", "-1", "100.5"] {
            #expect(throws: BacklotError.self, "\(text)") {
                _ = try Self.body("{\"p\":\(text)}").percent("p", allowingZero: true)
            }
        }
    }

    @Test func theSchemasSayTheSameMinimums() throws {
        let change = try Self.encoded(APISchemas.all["RolloutChange"])
        #expect(change.contains(#""minimum":0.01"#) && change.contains(#""maximum":0"#), "\(change)")
        let release = try Self.encoded(APISchemas.all["ReleaseCreate"])
        #expect(release.contains(#""minimum":0.01"#), "\(release)")
        #expect(API.Limits.lowestPercent == 0.01)
    }

    // MARK: null, staged rollouts, sizes

    @Test func optionalFieldsTheServerReadsNullAsAbsentForAreNullable() throws {
        func type(_ schema: String, _ path: [String]) throws -> JSONNode? {
            var node: JSONNode? = try JSONReader(source: schema).read(Array(Self.encoded(APISchemas.all[schema]).utf8))
                .root
            for key in path { node = node?[key] }
            return node
        }
        #expect(try type("AppCreate", ["properties", "fourEyes", "type"])?.serialized() == #"["boolean","null"]"#)
        #expect(try type("TokenCreate", ["properties", "label", "type"])?.serialized() == #"["string","null"]"#)
        let release = try Self.encoded(APISchemas.all["ReleaseCreate"])
        #expect(release.contains(#""dryRun":{"type":["boolean","null"]}"#), "\(release)")
        let f = try Fixture()
        #expect(try f.call("POST", "/api/apps", token: f.admin, json: #"{"id":"a0","fourEyes":null}"#).status == 201)
        let token = try f.call(
            "POST", "/api/tokens", token: f.admin, json: #"{"expiresInSeconds":60,"label":null,"role":"reader"}"#)
        #expect(token.status == 201 && token.text.contains(#""label":"""#), "\(token.text)")
        // A staged rollout outside production: the schema's second shape has no rollout.
        #expect(release.contains(#""rollout":{"type":"null"}"#), "\(release)")
        let staged = try f.call(
            "POST", "/api/apps/a0/releases", token: f.admin,
            json: #"{"channel":"external","rollout":0.01,"pack":"p","version":1}"#)
        #expect(staged.status == 400 && staged.text.contains("production channel only"), "\(staged.text)")
    }

    @Test func theLargestArchiveIsTheQuota() throws {
        let dir = try TemporaryDirectory("quota")
        defer { dir.remove() }
        let repository = try Repository(directory: RepositoryDirectory(path: dir.at("data")))
        #expect(UInt64(APISchemas.largestArchive) == repository.quotaBytes)
    }

    // MARK: display text

    static let displayText = try! NSRegularExpression(pattern: APISchemas.displayTextPattern)

    /// Whether the pattern matches all of `text`, as an ECMA-262 validator reads it (ICU's `$`
    /// would also match before a final newline: the match must cover the whole text).
    static func matches(_ text: String) -> Bool {
        let whole = NSRange(text.startIndex..., in: text)
        return displayText.firstMatch(in: text, range: whole)?.range == whole
    }

    @Test func theDisplayTextPatternRefusesExactlyWhatTheServerRefuses() throws {
        var scalars: [UInt32] = Array(0...0x2FF) + Array(0x2000...0x20FF) + [0xFEFF, 0x1F600, 0xE0001, 0x10FFFD]
        scalars.removeAll { (0xD800...0xDFFF).contains($0) }
        for value in scalars {
            guard let scalar = Unicode.Scalar(value) else { continue }
            let text = "a" + String(Character(scalar)) + "b"
            #expect(
                Self.matches(text) == (DisplayText.problem(in: text) == nil),
                "U+\(String(value, radix: 16, uppercase: true))")
        }
        #expect(Self.matches("") && Self.matches("release 2 is fine"))
        #expect(!Self.matches("line\n") && !Self.matches("\u{94} bad") && !Self.matches("x\u{202E}y"))
    }

    @Test func aReasonOrALabelWithAControlCharacterIsRefused() throws {
        let f = try Fixture()
        #expect(try f.call("POST", "/api/apps", token: f.admin, json: #"{"id":"a"}"#).status == 201)
        let reason = try f.call(
            "POST", "/api/apps/a/releases/1/reject", token: f.admin, json: #"{"reason":"\u0094 bad"}"#)
        #expect(reason.status == 400 && reason.text.contains("control character"), "\(reason.text)")
        for label in [#"\u0007bell"#, #"a\u200fb"#, #"tab\there"#] {
            let r = try f.call(
                "POST", "/api/tokens", token: f.admin, json: "{\"role\":\"reader\",\"label\":\"\(label)\"}")
            #expect(r.status == 400 && r.text.contains("label"), "\(label): \(r.text)")
        }
        let fine = try f.call("POST", "/api/tokens", token: f.admin, json: #"{"role":"reader","label":"CI – café ✓"}"#)
        #expect(fine.status == 201, "\(fine.text)")
    }

    // MARK: withdraw

    @Test func aPackThatIsNotOnTheChannelOrAVersionThatIsNotThereIsAConflict() throws {
        let f = try Fixture()
        #expect(try f.call("POST", "/api/apps", token: f.admin, json: #"{"id":"a"}"#).status == 201)
        #expect(try f.call("POST", "/api/apps/a/packs", token: f.admin, json: #"{"id":"Levels"}"#).status == 201)
        let never = try f.call(
            "POST", "/api/apps/a/packs/Levels/withdraw", token: f.admin, json: #"{"channel":"production"}"#)
        #expect(
            never.status == 409 && never.text.contains("\"code\":\"conflict\"")
                && never.text.contains("not on production"), "\(never.text)")
        let archive = try f.packArchive()
        let size = try FileDescriptor.openForReading(archive).size()
        #expect(
            try f.call("POST", "/api/apps/a/packs/Levels/versions", token: f.admin, json: "{\"size\":\(size)}").status
                == 201)
        #expect(
            try f.call("PUT", "/api/apps/a/packs/Levels/versions/1/archive", token: f.admin, file: archive).status
                == 202)
        #expect(try f.waitUntilProcessed("a", "Levels", 1)["state"]?.stringValue == "COMPLETE")
        #expect(
            try f.call(
                "POST", "/api/apps/a/releases", token: f.admin,
                json: #"{"pack":"Levels","version":1,"channel":"internal"}"#
            ).status == 200)
        let withdraw = { (channel: String) in
            try f.call(
                "POST", "/api/apps/a/packs/Levels/withdraw", token: f.admin, json: "{\"channel\":\"\(channel)\"}")
        }
        #expect(try withdraw("external").status == 409)
        #expect(try withdraw("internal").status == 200)
        #expect(try withdraw("internal").status == 409)
        // Rolling back a pack that exists, to nothing or to no version: a conflict too.
        let rollback = { (json: String) in
            try f.call("POST", "/api/apps/a/packs/Levels/rollback", token: f.admin, json: json)
        }
        #expect(try rollback(#"{"channel":"external"}"#).status == 409)
        let noVersion = try rollback(#"{"channel":"production","version":35}"#)
        #expect(noVersion.status == 409 && noVersion.text.contains("no version 35"), "\(noVersion.text)")
        // A release names its pack and version in the body: one the app does not have is a
        // conflict too (the app in the path exists), a dry run's as well; an unknown app is 404.
        for body in [
            #"{"pack":"Missing","version":1,"channel":"internal"}"#,
            #"{"pack":"Levels","version":35,"channel":"internal"}"#,
            #"{"pack":"Missing","version":1,"channel":"production","dryRun":true}"#,
        ] {
            let r = try f.call("POST", "/api/apps/a/releases", token: f.admin, json: body)
            #expect(r.status == 409 && r.text.contains("\"code\":\"conflict\""), "\(body): \(r.text)")
        }
        #expect(
            try f.call(
                "POST", "/api/apps/nope/releases", token: f.admin,
                json: #"{"pack":"Levels","version":1,"channel":"internal"}"#
            ).status == 404)
        // An unknown pack or app is still 404.
        let unknown = try f.call(
            "POST", "/api/apps/a/packs/Missing/withdraw", token: f.admin, json: #"{"channel":"internal"}"#)
        #expect(unknown.status == 404, "\(unknown.text)")
        #expect(
            try f.call("POST", "/api/apps/nope/packs/Levels/withdraw", token: f.admin, json: #"{"channel":"internal"}"#)
                .status == 404)
        // The document says so.
        let doc = OpenAPIDocument.text
        let withdrawOp = try JSONReader(source: "openapi").read(Array(doc.utf8)).root["paths"]?[
            "/api/apps/{app}/packs/{pack}/withdraw"]?["post"]?["responses"]
        #expect(withdrawOp?["409"] != nil && withdrawOp?["404"] != nil)
        #expect(
            try f.call("POST", "/api/apps/a/packs/Missing/rollback", token: f.admin, json: #"{"channel":"internal"}"#)
                .status == 404)
    }

    static func encoded(_ schema: JSONSchema?) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(schema), as: UTF8.self)
    }
}
