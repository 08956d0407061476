import BacklotProtocol

/// What kind of request a response answered, for `/metrics`: the published tree's files by
/// their role (docs/protocol.md §1), the API, the dashboard, `/metrics` itself, or anything else.
///
/// ```swift
/// RouteClass(route: "static", path: "/v1/packs/ab12….pack")   // .pack
/// ```
public enum RouteClass: Int, CaseIterable, Sendable {
    case catalog, keyList, pack, appleManifest, applePack, api, dashboard, metrics, other

    /// The label value in `/metrics`.
    public var label: String {
        switch self {
        case .catalog: "catalog"
        case .keyList: "keyList"
        case .pack: "pack"
        case .appleManifest: "appleManifest"
        case .applePack: "applePack"
        case .api: "api"
        case .dashboard: "dashboard"
        case .metrics: "metrics"
        case .other: "other"
        }
    }

    /// Classifies a response by the route label it carries and the request's path: `static`
    /// responses by what the path names in the tree (``PublishedTreeLayout``).
    public init(route: String, path: String) {
        switch route {
        case "api": self = .api
        case "metrics": self = .metrics
        case "dashboard": self = .dashboard
        case "static": self = Self.treeClass(path)
        default: self = path.utf8.starts(with: "/dashboard".utf8) ? .dashboard : .other
        }
    }

    /// The class of a path of the published tree (`.other` for deltas, delta lists and paths that
    /// are none of the tree's kinds).
    static func treeClass(_ path: String) -> RouteClass {
        switch PublishedTreeLayout(path: path) {
        case .catalog?: .catalog
        case .currentKeyList?, .keyList?: .keyList
        case .pack?: .pack
        case .appleManifest?: .appleManifest
        case .applePack?: .applePack
        default: .other
        }
    }
}
