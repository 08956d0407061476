/// A management-API body whose schema is read from its `Decodable` conformance: its members, their
/// kinds, which are optional and which it always writes (``JSONSchema/derived(from:)``). What JSON
/// Schema says beyond the Swift type (a pattern, a range, a description) is given per member in
/// ``memberSchemas``, by wire name; a name no member has is a programming error the derivation reports.
///
/// ```swift
/// extension API.PackCreate: WireObject {
///     public static let memberSchemas = ["id": APISchemas.id]
/// }
/// let schema = try JSONSchema.derived(from: API.PackCreate.self)   // {"id": pattern …}, required ["id"]
/// ```
public protocol WireObject: Decodable {
    /// The schema of a member where its Swift type says too little, by the member's wire name. A
    /// member the type makes optional is made nullable here unless the schema given already is.
    static var memberSchemas: [String: JSONSchema] { get }
    /// The object's own description, if any.
    static var objectDescription: String? { get }
}

extension WireObject {
    public static var memberSchemas: [String: JSONSchema] { [:] }
    public static var objectDescription: String? { nil }
}

/// A value the wire writes as one JSON scalar, whose schema it states, with a value of it for
/// ``JSONSchema/derived(from:)`` to build samples from (its own decoder may refuse what a
/// reader of types would make up).
public protocol WireValue: Decodable {
    static var wireSchema: JSONSchema { get }
    static var wireSample: Self { get }
}

extension WireEnumeration where Self: Decodable {
    /// The raw values, as an enumeration.
    public static var wireSchema: JSONSchema { .string(enumeration: allCases.map(\.rawValue)) }
    public static var wireSample: Self {
        guard let first = allCases.first else { preconditionFailure("\(Self.self) has no case") }
        return first
    }
}

extension VersionState: WireValue {}
extension ArchiveFormat: WireValue {}
extension Role: WireValue {}
extension Channel: WireValue {}

extension API.RolloutShare: WireValue {
    public static var wireSchema: JSONSchema { APISchemas.rolloutShare }
    public static var wireSample: Self { .init(percent: 100) }
}
