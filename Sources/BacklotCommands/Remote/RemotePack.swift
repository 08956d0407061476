/// A pack of an app, as `GET /api/apps/{app}/packs` lists it (`{"id","created","versions","latest"}`,
/// or the ID alone from an older server) and as `--json` prints it:
/// `{"pack","created","versionCount","latestVersion"}`.
struct RemotePack: Encodable {
    let pack: String
    @NullWhenAbsent var created: String? = nil
    @NullWhenAbsent var versionCount: Int? = nil
    @NullWhenAbsent var latestVersion: Int? = nil

    /// The answer of `GET /api/apps/{app}/packs`.
    struct List: Decodable {
        let packs: [RemotePack]
    }
}

extension RemotePack: Decodable {
    private enum WireKeys: String, CodingKey { case id, created, versions, latest }

    init(from decoder: any Decoder) throws {
        if let id = try? decoder.singleValueContainer().decode(String.self) {
            self.init(pack: id)
            return
        }
        let c = try decoder.container(keyedBy: WireKeys.self)
        self.init(
            pack: try c.decode(String.self, forKey: .id), created: try c.decodeIfPresent(String.self, forKey: .created),
            versionCount: try c.decodeIfPresent(Int.self, forKey: .versions),
            latestVersion: try c.decodeIfPresent(Int.self, forKey: .latest))
    }
}
