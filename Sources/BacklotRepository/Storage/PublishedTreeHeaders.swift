import BacklotProtocol

/// The `Cache-Control` and `Content-Type` of every file of the published tree, decided by its path
/// (docs/protocol.md §1, row by row): the one rule for `backlot serve`, for the objects written to
/// a bucket, and so for any CDN in front of either.
///
/// ```swift
/// let headers = PublishedTreeHeaders()                     // catalogs 60 s, the key list 300 s
/// headers.cacheControl("v1/apps/com.example.game/production/catalog.json")   // "public, max-age=60"
/// PublishedTreeHeaders.contentType("v1/packs/\(sha).pack")                // "application/octet-stream"
/// ```
public struct PublishedTreeHeaders: Sendable, Hashable {
    /// Seconds clients and caches may keep a catalog or an Apple download manifest.
    public var catalogMaxAge: Int
    /// Seconds clients and caches may keep the current key list (`v1/keys/root.json`).
    public var keyListMaxAge: Int

    /// The protocol's defaults: catalogs and Apple manifests 60 s, the current key list 300 s.
    public static let standardCatalogMaxAge = 60
    public static let standardKeyListMaxAge = 300

    /// - Parameters: the max-ages, at least 0 (0 makes every check reach the origin).
    public init(
        catalogMaxAge: Int = PublishedTreeHeaders.standardCatalogMaxAge,
        keyListMaxAge: Int = PublishedTreeHeaders.standardKeyListMaxAge
    ) {
        self.catalogMaxAge = max(0, catalogMaxAge)
        self.keyListMaxAge = max(0, keyListMaxAge)
    }

    /// `Cache-Control` for a path relative to the tree's root (`v1/…`).
    public func cacheControl(_ relative: String) -> String {
        cacheControl(relative, file: PublishedTreeLayout(path: relative))
    }

    /// `Cache-Control` for `relative` already parsed (`file` is `PublishedTreeLayout(path: relative)`):
    /// the server parses each request's path once.
    public func cacheControl(_ relative: String, file: PublishedTreeLayout?) -> String {
        switch file {
        case .pack?, .delta?, .keyList?: return "public, max-age=31536000, immutable"
        case .currentKeyList?: return "public, max-age=\(keyListMaxAge)"
        case .applePack?: return "no-cache"
        default: return relative.hasSuffix(".json") ? "public, max-age=\(catalogMaxAge)" : "no-cache"
        }
    }

    /// `Content-Type` for a path relative to the tree's root.
    public static func contentType(_ relative: String) -> String {
        contentType(relative, file: PublishedTreeLayout(path: relative))
    }

    /// `Content-Type` for `relative` already parsed (`file` is `PublishedTreeLayout(path: relative)`).
    public static func contentType(_ relative: String, file: PublishedTreeLayout?) -> String {
        if case .applePack? = file { return "application/octet-stream" }
        if relative.hasSuffix(".json") { return "application/json" }
        if relative.hasSuffix(".pub") || relative.hasSuffix(".pem") { return "text/plain; charset=utf-8" }
        return "application/octet-stream"
    }

    /// The SHA-256 (hex) of `v1/packs/SHA256.pack` (or of a delta file, `v1/deltas/SHA256.delta`,
    /// also named by the SHA-256 of its bytes), or nil for any other path.
    public static func contentAddress(_ relative: String) -> String? {
        PublishedTreeLayout(path: relative)?.contentAddress
    }
}
