import BacklotProtocol

/// Who made an API call: the token's id and label, its role and the person it belongs to (what
/// ``Tokens/authenticate(_:)`` found).
///
/// Release requests record the caller that asked and the one that decided, so that an app's
/// four-eyes rule can refuse an approval by the person who asked, whichever of their tokens they use.
///
/// ```swift
/// let caller = try repository.tokens.authenticate(bearerText)
/// try repository.releases.approve(requestID: 3, app: "com.example.game", by: caller)
/// ```
public struct Caller: Sendable, Hashable {
    /// The token's id (as `GET /api/tokens` lists it).
    public let id: Int
    /// The token's label (may be empty).
    public let label: String
    public let role: Role
    /// The person (or service account) the token belongs to: what an app's four-eyes rule compares.
    public let person: String

    public init(id: Int, label: String, role: Role, person: String) {
        self.id = id
        self.label = label
        self.role = role
        self.person = person
    }
}

extension Caller {
    /// The caller of the API request this thread (or task) is answering, for the audit trail:
    /// set by the management API around each route, nil for the server's own work and for
    /// commands run on the data folder.
    ///
    /// ```swift
    /// try Caller.$current.withValue(caller) { try repository.apps.create("com.example.game") }
    /// ```
    @TaskLocal public static var current: Caller?
}
