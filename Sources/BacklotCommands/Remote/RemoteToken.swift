/// An API token, as the management API answers it and as `--json` prints it:
/// `{"id","label","role","created","lastUsed","expires","revoked"}`, with `"token"` once, when it
/// is made (or `"tokenFile"`, the file it was written to, instead).
struct RemoteToken: Codable {
    let id: Int
    @NullWhenAbsent var label: String? = nil
    let role: String
    @NullWhenAbsent var created: String? = nil
    @NullWhenAbsent var lastUsed: String? = nil
    @NullWhenAbsent var expires: String? = nil
    /// When it was revoked.
    @NullWhenAbsent var revoked: String? = nil
    /// The secret, in the answer that made it (never in a list).
    var token: String? = nil
    /// Where `-o` wrote the secret (output only).
    var tokenFile: String? = nil

    /// `GET /api/tokens`, and the `--json` of `tokens list`.
    struct List: Codable {
        let tokens: [RemoteToken]
    }
}
