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

    /// Classifies a response by the route label it carries and the request's path (compared as
    /// bytes, without allocating): `static` responses by where the path points in the tree.
    public init(route: String, path: String) {
        switch route {
        case "api": self = .api
        case "metrics": self = .metrics
        case "dashboard": self = .dashboard
        case "static": self = Self.treeClass(path)
        default: self = path.utf8.starts(with: "/dashboard".utf8) ? .dashboard : .other
        }
    }

    /// The class of a path of the published tree (`.other` for paths that are none of its kinds).
    static func treeClass(_ path: String) -> RouteClass {
        let p = path.utf8
        if p.starts(with: "/v1/packs/".utf8) { return .pack }
        if p.starts(with: "/v1/keys/".utf8) { return .keyList }
        if p.starts(with: "/v1/apps/".utf8) {
            return p.reversed().starts(with: "/catalog.json".utf8.reversed()) ? .catalog : .other
        }
        if p.starts(with: "/v1/apple/".utf8) {
            if p.reversed().starts(with: "/manifest.json".utf8.reversed()) { return .appleManifest }
            return TreePath.applePack(path) != nil ? .applePack : .other
        }
        return .other
    }
}
