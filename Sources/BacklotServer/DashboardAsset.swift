import BacklotCrypto

/// One file of the web dashboard, embedded in the binary: its name under `/dashboard/`, its media
/// type, its bytes and a strong `ETag` (the SHA-256 of the bytes), computed once.
///
/// The files are kept in `Sources/BacklotServer/Dashboard/` and compiled into the binary by
/// SwiftPM (`.embedInCode("Dashboard")`: each file becomes a byte array of `PackageResources`),
/// so the binary needs no resource bundle next to it wherever it is installed. ``embedded`` names
/// them; a test fails when a file of the folder is not named there.
///
/// ```swift
/// let js = DashboardAsset.named("dashboard.js")
/// print(js?.contentType ?? "none")   // text/javascript; charset=utf-8
/// ```
struct DashboardAsset: Sendable {
    /// The file name under `/dashboard/` (`index.html`, `dashboard.js`, …).
    let name: String
    /// The `Content-Type` it is served with.
    let contentType: String
    /// The file's bytes.
    let bytes: [UInt8]
    /// `"SHA256-HEX"`, quoted as an entity tag.
    let etag: String

    init(name: String, bytes: [UInt8]) {
        self.name = name
        self.bytes = bytes
        contentType = Self.contentType(name)
        etag = "\"\(SHA256.hash(bytes).hex)\""
    }

    /// The media type of a dashboard file, by its extension (`application/octet-stream` when unknown).
    static func contentType(_ name: String) -> String {
        switch name.split(separator: ".").last.map(String.init) ?? "" {
        case "html": "text/html; charset=utf-8"
        case "css": "text/css; charset=utf-8"
        case "js": "text/javascript; charset=utf-8"
        case "svg": "image/svg+xml"
        case "json": "application/json"
        default: "application/octet-stream"
        }
    }

    /// The files of `Sources/BacklotServer/Dashboard/`, by name.
    static let embedded: [(name: String, bytes: [UInt8])] = [
        ("index.html", PackageResources.index_html),
        ("dashboard.css", PackageResources.dashboard_css),
        ("dashboard.js", PackageResources.dashboard_js),
    ]

    /// Every embedded file, by name.
    static let all: [String: DashboardAsset] = Dictionary(
        uniqueKeysWithValues: embedded.map { ($0.name, DashboardAsset(name: $0.name, bytes: $0.bytes)) })

    /// The embedded file called `name`, or nil.
    static func named(_ name: String) -> DashboardAsset? { all[name] }
}
