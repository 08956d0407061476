import BacklotBasics
import BacklotProtocol

/// A token as `--json` prints it (docs/json.md): `{"id","label","role","person","created","lastUsed",
/// "expires","revoked"}`, with `"token"` once, when it is made (or `"tokenFile"`, the file it was
/// written to, instead).
struct TokenOutput: Encodable {
    let id: Int
    let label: String
    let role: String
    /// The person (or service account) it belongs to.
    let person: String
    let created: String
    @NullWhenAbsent var lastUsed: String?
    @NullWhenAbsent var expires: String?
    /// When it was revoked.
    @NullWhenAbsent var revoked: String?
    /// The secret, in the answer that made it (never in a list).
    var token: String? = nil
    /// Where `-o` wrote the secret.
    var tokenFile: String? = nil

    init(_ t: API.Token) {
        id = t.id
        label = t.label
        role = t.role.rawValue
        person = t.person
        created = t.created
        lastUsed = t.lastUsed
        expires = t.expires
        revoked = t.revoked
    }

    init(_ t: API.IssuedToken) {
        id = t.id
        label = t.label
        role = t.role.rawValue
        person = t.person
        created = t.created
        lastUsed = nil
        expires = t.expires
        revoked = nil
        token = t.token
    }

    /// The `--json` of `tokens list`.
    struct List: Encodable {
        let tokens: [TokenOutput]
    }
}
