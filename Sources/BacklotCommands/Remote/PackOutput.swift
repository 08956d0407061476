import BacklotBasics
import BacklotProtocol

/// A pack as `packs --json` prints it (docs/json.md): `{"pack","created","versionCount","latestVersion"}`.
struct PackOutput: Encodable {
    let pack: String
    let created: String
    let versionCount: Int
    @NullWhenAbsent var latestVersion: Int?

    init(_ p: API.Pack) {
        pack = p.id
        created = p.created
        versionCount = p.versions
        latestVersion = p.latest
    }
}
