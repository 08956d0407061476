/// A version of a pack, as the management API answers it (`size`, `received`, `installSize`) and as
/// `--json` prints it (docs/json.md): `{"app","pack","version","state","reason","packBytes",
/// "receivedBytes","installBytes","archiveSHA256","format"}`.
struct RemoteVersion: Encodable {
    @NullWhenAbsent var app: String? = nil
    @NullWhenAbsent var pack: String? = nil
    let version: Int
    /// `AWAITING_UPLOAD`, `PROCESSING`, `COMPLETE` or `FAILED`.
    let state: String
    @NullWhenAbsent var reason: String? = nil
    @NullWhenAbsent var packBytes: UInt64? = nil
    @NullWhenAbsent var receivedBytes: UInt64? = nil
    @NullWhenAbsent var installBytes: UInt64? = nil
    @NullWhenAbsent var archiveSHA256: String? = nil
    @NullWhenAbsent var format: String? = nil

    /// The answer of `GET …/versions`.
    struct List: Decodable {
        let versions: [RemoteVersion]
    }
}

extension RemoteVersion: Decodable {
    private enum WireKeys: String, CodingKey {
        case app, pack, version, state, reason, size, received, installSize, archiveSHA256, format
    }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: WireKeys.self)
        self.init(
            app: try c.decodeIfPresent(String.self, forKey: .app),
            pack: try c.decodeIfPresent(String.self, forKey: .pack),
            version: try c.decode(Int.self, forKey: .version), state: try c.decode(String.self, forKey: .state),
            reason: try c.decodeIfPresent(String.self, forKey: .reason),
            packBytes: try c.decodeIfPresent(UInt64.self, forKey: .size),
            receivedBytes: try c.decodeIfPresent(UInt64.self, forKey: .received),
            installBytes: try c.decodeIfPresent(UInt64.self, forKey: .installSize),
            archiveSHA256: try c.decodeIfPresent(String.self, forKey: .archiveSHA256),
            format: try c.decodeIfPresent(String.self, forKey: .format))
    }
}
