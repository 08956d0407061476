/// A release request, as the management API answers it and as `--json` prints it (the same keys):
/// `{"id","app","pack","version","channel","rolloutPercent","status","requested","requestedBy",
/// "decided","decidedBy","reason"}`.
struct RemoteReleaseRequest: Codable {
    /// A token that asked or decided: `{"id","label"}`.
    struct Token: Codable {
        let id: Int
        var label: String? = nil

        /// As text: `token #3 (ci uploader)`.
        var text: String { label.map { $0.isEmpty ? "token #\(id)" : "token #\(id) (\($0))" } ?? "token #\(id)" }
    }

    let id: Int
    @NullWhenAbsent var app: String? = nil
    let pack: String
    let version: Int
    let channel: String
    @NullWhenAbsent var rolloutPercent: Double? = nil
    /// `pending`, `approved`, `rejected` or `superseded`.
    let status: String
    @NullWhenAbsent var requested: String? = nil
    @NullWhenAbsent var requestedBy: Token? = nil
    @NullWhenAbsent var decided: String? = nil
    @NullWhenAbsent var decidedBy: Token? = nil
    @NullWhenAbsent var reason: String? = nil

    /// The answer of `GET /api/apps/{app}/releases`.
    struct List: Decodable {
        let releases: [RemoteReleaseRequest]
    }
}
