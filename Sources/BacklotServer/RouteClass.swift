import BacklotProtocol

/// What kind of request a response answered, for `/metrics`: the published tree's files by
/// their role (docs/protocol.md §1), the API, the dashboard, `/metrics` itself, or anything else.
///
/// ```swift
/// RouteClass(route: "static", path: "/v1/packs/ab12….pack")   // .pack
/// ```
public enum RouteClass: Int, CaseIterable, Sendable {
    case catalog, keyList, pack, appleManifest, applePack, delta, api, dashboard, metrics, other

    /// The label value in `/metrics`.
    public var label: String {
        switch self {
        case .catalog: "catalog"
        case .keyList: "keyList"
        case .pack: "pack"
        case .appleManifest: "appleManifest"
        case .applePack: "applePack"
        case .delta: "delta"
        case .api: "api"
        case .dashboard: "dashboard"
        case .metrics: "metrics"
        case .other: "other"
        }
    }

    /// Classifies a response by the route label it carries and the request's path: `static`
    /// responses by what the path names in the tree (``PublishedTreeLayout``), and a request shed
    /// under load (``LoadShedder``) as what it asked for.
    public init(route: String, path: String) {
        switch route {
        case "api": self = .api
        case "metrics": self = .metrics
        case "dashboard": self = .dashboard
        case "static": self = Self.treeClass(path)
        case LoadShedder.route: self = path.utf8.starts(with: API.pathPrefix.utf8) ? .api : Self.treeClass(path)
        default: self = path.utf8.starts(with: "/dashboard".utf8) ? .dashboard : .other
        }
    }

    /// The class of a path of the published tree (`.delta` for deltas and delta lists, `.other` for
    /// paths that are none of the tree's kinds).
    static func treeClass(_ path: String) -> RouteClass {
        switch PublishedTreeLayout(path: path) {
        case .catalog?: .catalog
        case .currentKeyList?, .keyList?: .keyList
        case .pack?: .pack
        case .appleManifest?: .appleManifest
        case .applePack?: .applePack
        case .delta?, .deltaList?: .delta
        default: .other
        }
    }

    /// Whether an answer of `status` to `path` is a miss every client makes by design rather than an
    /// error: a 404 for a numbered key list (`v1/keys/root-N.json`) is how a client learns that no
    /// rotation followed the list it holds (docs/protocol.md §4), so every check of every device has one.
    public static func isExpectedMiss(route: String, path: String, status: Int) -> Bool {
        guard route == "static", status == 404, case .keyList? = PublishedTreeLayout(path: path) else { return false }
        return true
    }
}
