import BacklotBasics
import BacklotProtocol
import Foundation
import Testing

/// The OpenAPI document's schemas are read from the wire's `Codable` types: what a type reads and
/// writes is what its schema says, and a member schema that does not fit its type is refused.
struct SchemaDerivationTests {
    struct Inner: Codable, WireObject {
        var count: Int
        static var memberSchemas: [String: JSONSchema] { ["count": .integer(minimum: 1, maximum: 9)] }
    }

    struct Sample: Codable, WireObject {
        var name: String
        var role: Role
        @NullWhenAbsent var note: String?
        var flag: Bool?
        var inner: Inner
        var list: [Inner]
        @NullWhenAbsent var named: Inner?
        var share: API.RolloutShare
        static var memberSchemas: [String: JSONSchema] { ["name": .string(pattern: "^a+$")] }
        static var objectDescription: String? { "A sample" }
    }

    struct Misnamed: Codable, WireObject {
        var name: String
        static var memberSchemas: [String: JSONSchema] { ["nmae": .string()] }
    }

    struct OtherKind: Codable, WireObject {
        var size: Int
        static var memberSchemas: [String: JSONSchema] { ["size": .string()] }
    }

    struct Nested: Codable, WireObject {
        var a: Int
        init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: Key.self)
            let inner = try c.nestedContainer(keyedBy: Key.self, forKey: .outer)
            a = try inner.decode(Int.self, forKey: .a)
        }
        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: Key.self)
            var inner = c.nestedContainer(keyedBy: Key.self, forKey: .outer)
            try inner.encode(a, forKey: .a)
        }
        enum Key: String, CodingKey { case outer, a }
    }

    /// A tree: it holds itself through an array and an optional member.
    final class Node: Codable, WireObject {
        var name: String
        var children: [Node]
        var parent: [String: Node]?
        @NullWhenAbsent var next: Node?
        var tags: [String: String]
    }

    /// A type that holds itself, read where it has no name of its own.
    final class Loop: Codable, WireObject {
        var next: Loop
        init(next: Loop) { self.next = next }
    }

    static func json(_ schema: JSONSchema) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(schema)) as? [String: Any])
    }

    @Test func aTypesMembersKindsAndPresenceAreItsSchemas() throws {
        let schema = try Self.json(
            JSONSchema.derived(from: Sample.self, named: [ObjectIdentifier(Inner.self): "Inner"]))
        #expect(schema["description"] as? String == "A sample")
        #expect(schema["additionalProperties"] as? Bool == false)
        // Read with decode, or written as null when nil (NullWhenAbsent): required. A plain optional is not.
        #expect(
            Set(try #require(schema["required"] as? [String]))
                == ["name", "role", "note", "inner", "list", "named", "share"])
        let p = try #require(schema["properties"] as? [String: [String: Any]])
        #expect(p["name"]?["pattern"] as? String == "^a+$")
        #expect(p["role"]?["enum"] as? [String] == Role.allCases.map(\.rawValue))
        #expect(p["note"]?["type"] as? [String] == ["string", "null"])
        #expect(p["flag"]?["type"] as? [String] == ["boolean", "null"])
        // A named type is referred to, also in an array and when nullable; its member schemas apply where inlined.
        #expect(p["inner"]?["$ref"] as? String == "#/components/schemas/Inner")
        #expect((p["list"]?["items"] as? [String: Any])?["$ref"] as? String == "#/components/schemas/Inner")
        let named = try #require(p["named"]?["anyOf"] as? [[String: Any]])
        #expect(named.first?["$ref"] as? String == "#/components/schemas/Inner")
        #expect(named.last?["type"] as? String == "null")
        #expect(p["share"]?["minimum"] as? Double == API.Limits.lowestPercent)

        let inlined = try Self.json(JSONSchema.derived(from: Sample.self))
        let inner = try #require((inlined["properties"] as? [String: [String: Any]])?["inner"])
        let count = try #require((inner["properties"] as? [String: [String: Any]])?["count"])
        #expect(count["minimum"] as? Int == 1 && count["maximum"] as? Int == 9)
    }

    @Test func memberSchemasThatDoNotFitTheTypeAreRefusedWithTheirName() throws {
        let misnamed = #expect(throws: SchemaDerivationError.self) { try JSONSchema.derived(from: Misnamed.self) }
        #expect(misnamed?.description.contains("\"nmae\"") == true)
        let kind = #expect(throws: SchemaDerivationError.self) { try JSONSchema.derived(from: OtherKind.self) }
        #expect(kind?.description.contains("\"size\"") == true)
        let nested = #expect(throws: SchemaDerivationError.self) { try JSONSchema.derived(from: Nested.self) }
        #expect(nested?.description.contains("nested container") == true)
    }

    @Test func aTypeThatHoldsItselfIsAReferenceAndOneWithoutANameIsRefused() throws {
        let schema = try Self.json(JSONSchema.derived(from: Node.self, named: [ObjectIdentifier(Node.self): "Node"]))
        let p = try #require(schema["properties"] as? [String: [String: Any]])
        #expect((p["children"]?["items"] as? [String: Any])?["$ref"] as? String == "#/components/schemas/Node")
        #expect((p["next"]?["anyOf"] as? [[String: Any]])?.first?["$ref"] as? String == "#/components/schemas/Node")
        // A dictionary is an object whose members the data names (not a closed empty one).
        #expect(p["tags"]?["type"] as? String == "object" && p["tags"]?["additionalProperties"] == nil)
        #expect(Set(try #require(schema["required"] as? [String])) == ["name", "children", "next", "tags"])
        let loop = #expect(throws: SchemaDerivationError.self) { try JSONSchema.derived(from: Loop.self) }
        #expect(loop?.description.contains("holds itself") == true)
    }

    @Test func everySchemaOfTheDocumentIsReadFromItsType() throws {
        let schemas = try APISchemas.schemas()
        // An answer's nullable member is required (written as null); a body's optional one is not.
        let app = try Self.json(try #require(schemas["App"]))
        #expect((app["required"] as? [String])?.contains("secondReviewerAbove") == true)
        let create = try Self.json(try #require(schemas["AppCreate"]))
        #expect(create["required"] as? [String] == ["id"])
        // The release request's members are exactly those the type has.
        let request = try Self.json(try #require(schemas["ReleaseRequest"]))
        let members = Set((request["properties"] as? [String: Any] ?? [:]).keys)
        let sample = API.ReleaseRequest(
            id: 1, app: "a", channel: .production, pack: "p", version: 1, rolloutPercent: nil, status: "pending",
            requested: "t", requestedBy: nil, decided: nil, decidedBy: nil, reason: nil, notes: nil)
        let written = try JSONSerialization.jsonObject(with: JSONEncoder().encode(sample)) as? [String: Any]
        #expect(members == Set((written ?? [:]).keys))
    }
}
