/// An app, as the management API answers it (`{"id","created","fourEyes","quotaBytes"}`, or the ID
/// alone from an older server) and as `--json` prints it (docs/json.md):
/// `{"app","created","fourEyes","quotaBytes"}`.
struct RemoteApp: Encodable {
    let app: String
    @NullWhenAbsent var created: String? = nil
    @NullWhenAbsent var fourEyes: Bool? = nil
    @NullWhenAbsent var quotaBytes: UInt64? = nil

    /// `GET /api/apps`, and the `--json` of `apps list`.
    struct List: Codable {
        let apps: [RemoteApp]
    }
}

extension RemoteApp: Decodable {
    private enum WireKeys: String, CodingKey { case id, created, fourEyes, quotaBytes }

    init(from decoder: any Decoder) throws {
        if let id = try? decoder.singleValueContainer().decode(String.self) {
            self.init(app: id)
            return
        }
        let c = try decoder.container(keyedBy: WireKeys.self)
        self.init(
            app: try c.decode(String.self, forKey: .id), created: try c.decodeIfPresent(String.self, forKey: .created),
            fourEyes: try c.decodeIfPresent(Bool.self, forKey: .fourEyes),
            quotaBytes: try c.decodeIfPresent(UInt64.self, forKey: .quotaBytes))
    }
}
