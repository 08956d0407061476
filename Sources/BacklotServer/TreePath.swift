import BacklotProtocol
import BacklotRepository

/// What a request's path of the published tree is a download of, for the download counts.
///
/// ```swift
/// TreePath.target("/v1/apps/com.example.game/production/catalog.json")   // .catalog(app: "com.example.game")
/// ```
enum TreePath {
    /// What the file at `path` (``PublishedTreeLayout``) is a download of, or nil for a key list, a
    /// delta list or a path of no kind.
    /// - Parameter app: the app the client named (``PublishedTreeLayout/appHeader``), for an
    ///   archive two apps share.
    static func target(_ path: String, app: String? = nil) -> DownloadHit.Target? {
        switch PublishedTreeLayout(path: path) {
        case .catalog(let app, _)?: .catalog(app: app)
        case .pack(let sha)?: .pack(archiveSHA256: sha, app: app)
        case .appleManifest(let app, _, _)?: .appleManifest(app: app)
        case .applePack(let app, let channel, _, let pack)?: .applePack(app: app, channel: channel.rawValue, pack: pack)
        case .delta(let sha)?: .delta(sha256: sha)
        default: nil
        }
    }
}
