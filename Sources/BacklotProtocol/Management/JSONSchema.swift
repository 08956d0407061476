/// A JSON Schema (2020-12, as OpenAPI 3.1 uses it), as a value: what the OpenAPI document says of
/// each request and response body. One `Encodable` encoding; only the keywords set are written.
///
/// ```swift
/// let app = JSONSchema.object(["id": .string(pattern: APISchemas.idPattern), "fourEyes": .boolean], required: ["id"])
/// let data = try JSONEncoder().encode(app)   // {"additionalProperties":false,"properties":{…},"required":["id"],"type":"object"}
/// ```
public final class JSONSchema: Encodable, Sendable {
    /// A number keyword's value: an integer (written exactly, even past 2^53) or a fraction.
    public enum Number: Encodable, Sendable, Hashable {
        case integer(Int64)
        case unsigned(UInt64)
        case fraction(Double)

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.singleValueContainer()
            switch self {
            case .integer(let n): try c.encode(n)
            case .unsigned(let n): try c.encode(n)
            case .fraction(let d): try c.encode(d)
            }
        }
    }

    let ref: String?
    let type: [String]
    let format: String?
    let pattern: String?
    let enumeration: [String]?
    let minimum: Number?
    let maximum: Number?
    let minLength: Int?
    let maxLength: Int?
    let properties: [String: JSONSchema]?
    let required: [String]?
    let closed: Bool
    let items: JSONSchema?
    let minItems: Int?
    let maxItems: Int?
    let contains: JSONSchema?
    let anyOf: [JSONSchema]?
    let description: String?

    init(
        ref: String? = nil, type: [String] = [], format: String? = nil, pattern: String? = nil,
        enumeration: [String]? = nil,
        minimum: Number? = nil, maximum: Number? = nil, minLength: Int? = nil, maxLength: Int? = nil,
        properties: [String: JSONSchema]? = nil, required: [String]? = nil, closed: Bool = false,
        items: JSONSchema? = nil, minItems: Int? = nil, maxItems: Int? = nil, contains: JSONSchema? = nil,
        anyOf: [JSONSchema]? = nil, description: String? = nil
    ) {
        self.ref = ref
        self.type = type
        self.format = format
        self.pattern = pattern
        self.enumeration = enumeration
        self.minimum = minimum
        self.maximum = maximum
        self.minLength = minLength
        self.maxLength = maxLength
        self.properties = properties
        self.required = required
        self.closed = closed
        self.items = items
        self.minItems = minItems
        self.maxItems = maxItems
        self.contains = contains
        self.anyOf = anyOf
        self.description = description
    }

    /// A reference to a schema of the document's `components.schemas`.
    public static func ref(_ name: String) -> JSONSchema { JSONSchema(ref: "#/components/schemas/" + name) }

    /// A string, optionally with a pattern, a format, a length range or a list of allowed values.
    public static func string(
        pattern: String? = nil, format: String? = nil, enumeration: [String]? = nil,
        minLength: Int? = nil, maxLength: Int? = nil, description: String? = nil
    ) -> JSONSchema {
        JSONSchema(
            type: ["string"], format: format, pattern: pattern, enumeration: enumeration, minLength: minLength,
            maxLength: maxLength, description: description)
    }

    /// A string or null: `"type": ["string", "null"]` (a pattern or a length applies to a string only).
    public static func nullableString(
        pattern: String? = nil, format: String? = nil, minLength: Int? = nil, maxLength: Int? = nil,
        description: String? = nil
    ) -> JSONSchema {
        JSONSchema(
            type: ["string", "null"], format: format, pattern: pattern, minLength: minLength, maxLength: maxLength,
            description: description)
    }

    /// A whole number within a range.
    public static func integer(
        minimum: Int64? = nil, maximum: Int64? = nil, nullable: Bool = false, description: String? = nil
    ) -> JSONSchema {
        JSONSchema(
            type: nullable ? ["integer", "null"] : ["integer"], minimum: minimum.map(Number.integer),
            maximum: maximum.map(Number.integer), description: description)
    }

    /// A whole number up to an unsigned bound (catalog versions).
    public static func unsigned(
        minimum: UInt64 = 0, maximum: UInt64, nullable: Bool = false, description: String? = nil
    ) -> JSONSchema {
        JSONSchema(
            type: nullable ? ["integer", "null"] : ["integer"], minimum: .unsigned(minimum),
            maximum: .unsigned(maximum), description: description)
    }

    /// Any number within a range.
    public static func number(
        minimum: Double? = nil, maximum: Double? = nil, nullable: Bool = false, description: String? = nil
    ) -> JSONSchema {
        JSONSchema(
            type: nullable ? ["number", "null"] : ["number"], minimum: minimum.map(Number.fraction),
            maximum: maximum.map(Number.fraction), description: description)
    }

    public static var boolean: JSONSchema { JSONSchema(type: ["boolean"]) }

    /// true, false or null (an optional flag the server reads null as absent for).
    public static var nullableBoolean: JSONSchema { JSONSchema(type: ["boolean", "null"]) }

    /// Only null (a member one shape of an `anyOf` leaves out: absent, or null).
    public static var null: JSONSchema { JSONSchema(type: ["null"]) }

    /// Any JSON value (`{}`): a member the server does not read in that shape.
    public static func anyValue(description: String? = nil) -> JSONSchema { JSONSchema(description: description) }

    /// An object with exactly these properties (`additionalProperties: false`), some required.
    public static func object(
        _ properties: [String: JSONSchema], required: [String] = [], description: String? = nil
    ) -> JSONSchema {
        JSONSchema(
            type: ["object"], properties: properties, required: required.sorted(), closed: true,
            description: description)
    }

    /// An object whose members are not described (an `.aar` manifest, checked by the server).
    public static var anyObject: JSONSchema { JSONSchema(type: ["object"]) }

    /// An array of `items`, with at least `minItems` and at most `maxItems` of them, one of which
    /// matches `contains` when given.
    public static func array(
        _ items: JSONSchema, minItems: Int? = nil, maxItems: Int? = nil, contains: JSONSchema? = nil,
        description: String? = nil
    ) -> JSONSchema {
        JSONSchema(
            type: ["array"], items: items, minItems: minItems, maxItems: maxItems, contains: contains,
            description: description)
    }

    /// This schema, or null.
    public var orNull: JSONSchema { JSONSchema(anyOf: [self, JSONSchema(type: ["null"])]) }

    /// Binary bytes (an upload body).
    public static var binary: JSONSchema { JSONSchema(type: ["string"], format: "binary") }

    enum Key: String, CodingKey {
        case ref = "$ref"
        case type, format, pattern
        case enumeration = "enum"
        case minimum, maximum, minLength, maxLength, properties, required
        case additionalProperties, items, minItems, maxItems, contains, anyOf, description
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Key.self)
        try c.encodeIfPresent(ref, forKey: .ref)
        if type.count == 1 {
            try c.encode(type[0], forKey: .type)
        } else if !type.isEmpty {
            try c.encode(type, forKey: .type)
        }
        try c.encodeIfPresent(format, forKey: .format)
        try c.encodeIfPresent(pattern, forKey: .pattern)
        try c.encodeIfPresent(enumeration, forKey: .enumeration)
        try c.encodeIfPresent(minimum, forKey: .minimum)
        try c.encodeIfPresent(maximum, forKey: .maximum)
        try c.encodeIfPresent(minLength, forKey: .minLength)
        try c.encodeIfPresent(maxLength, forKey: .maxLength)
        try c.encodeIfPresent(properties, forKey: .properties)
        if let required, !required.isEmpty { try c.encode(required, forKey: .required) }
        if closed { try c.encode(false, forKey: .additionalProperties) }
        try c.encodeIfPresent(items, forKey: .items)
        try c.encodeIfPresent(minItems, forKey: .minItems)
        try c.encodeIfPresent(maxItems, forKey: .maxItems)
        try c.encodeIfPresent(contains, forKey: .contains)
        try c.encodeIfPresent(anyOf, forKey: .anyOf)
        try c.encodeIfPresent(description, forKey: .description)
    }
}
