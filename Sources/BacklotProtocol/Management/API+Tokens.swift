import BacklotBasics

// Tokens and the caller.
extension API {
    /// A token, without its secret.
    public struct Token: Codable, Sendable, Hashable {
        public var id: Int
        public var label: String
        public var role: Role
        /// The person (or service account) it belongs to: what an app's four-eyes rule compares.
        public var person: String
        public var created: String
        @NullWhenAbsent public var lastUsed: String?
        @NullWhenAbsent public var expires: String?
        /// When it was revoked; null while it is not.
        @NullWhenAbsent public var revoked: String?

        public init(
            id: Int, label: String, role: Role, person: String, created: String, lastUsed: String?, expires: String?,
            revoked: String?
        ) {
            self.id = id
            self.label = label
            self.role = role
            self.person = person
            self.created = created
            self.lastUsed = lastUsed
            self.expires = expires
            self.revoked = revoked
        }
    }

    /// Every token, oldest first.
    public struct TokenList: Codable, Sendable, Hashable {
        public var tokens: [Token]
        public init(tokens: [Token]) { self.tokens = tokens }
    }

    /// The body of `POST /api/tokens`.
    public struct TokenCreate: Codable, Sendable, Hashable {
        public var role: Role
        /// Who it belongs to; when absent, the person of the token that creates it.
        public var person: String?
        public var label: String?
        public var expiresInSeconds: Int64?
        public init(role: Role, person: String? = nil, label: String? = nil, expiresInSeconds: Int64? = nil) {
            self.role = role
            self.person = person
            self.label = label
            self.expiresInSeconds = expiresInSeconds
        }
    }

    /// A token with its secret, shown once (`POST /api/tokens`, `…/rotate`).
    public struct IssuedToken: Codable, Sendable, Hashable {
        public var id: Int
        public var token: String
        public var role: Role
        public var label: String
        public var person: String
        public var created: String
        @NullWhenAbsent public var expires: String?
        public init(
            id: Int, token: String, role: Role, label: String, person: String, created: String, expires: String?
        ) {
            self.id = id
            self.token = token
            self.role = role
            self.label = label
            self.person = person
            self.created = created
            self.expires = expires
        }
    }

    /// The calling token (`GET /api/whoami`).
    public struct WhoAmI: Codable, Sendable, Hashable {
        public var tokenId: Int
        public var label: String
        public var role: Role
        public var person: String
        @NullWhenAbsent public var expires: String?
        public init(tokenId: Int, label: String, role: Role, person: String, expires: String?) {
            self.tokenId = tokenId
            self.label = label
            self.role = role
            self.person = person
            self.expires = expires
        }
    }
}
