import BacklotBasics
import BacklotProtocol

/// A version as `--json` prints it (docs/json.md): `{"app","pack","version","state","reason",
/// "packBytes","receivedBytes","installBytes","archiveSHA256","format","notes"}` (the API's `size`,
/// `received` and `installSize`, named as every command names byte counts).
struct VersionOutput: Encodable {
    let app: String
    let pack: String
    let version: Int
    /// `AWAITING_UPLOAD`, `PROCESSING`, `COMPLETE` or `FAILED`.
    let state: String
    @NullWhenAbsent var reason: String?
    let packBytes: UInt64
    let receivedBytes: UInt64
    @NullWhenAbsent var installBytes: UInt64?
    @NullWhenAbsent var archiveSHA256: String?
    let format: String
    @NullWhenAbsent var notes: String?

    init(_ v: API.Version) {
        app = v.app
        pack = v.pack
        version = v.version
        state = v.state.rawValue
        reason = v.reason
        packBytes = v.size
        receivedBytes = v.received
        installBytes = v.installSize
        archiveSHA256 = v.archiveSHA256
        format = v.format.rawValue
        notes = v.notes
    }
}
