/// A token named in a record (who asked for a release, who decided): its id, its label then, and
/// the person it belonged to.
public struct TokenReference: Sendable, Hashable {
    public let id: Int
    public let label: String
    /// The person (or service account); for a token made before tokens had one, `token #ID`.
    public let person: String

    public init(id: Int, label: String, person: String) {
        self.id = id
        self.label = label
        self.person = person
    }

    public init(_ caller: Caller) { self.init(id: caller.id, label: caller.label, person: caller.person) }

    /// The person of a token that has none recorded (made before people were): the token itself.
    public static func defaultPerson(ofToken id: Int) -> String { "token #\(id)" }
}
