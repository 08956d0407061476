/// A token named in a record (who asked for a release, who decided): its id and its label then.
public struct TokenReference: Sendable, Hashable {
    public let id: Int
    public let label: String

    public init(id: Int, label: String) {
        self.id = id
        self.label = label
    }

    public init(_ caller: Caller) { self.init(id: caller.id, label: caller.label) }
}
