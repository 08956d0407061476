import BacklotBasics
import BacklotHTTPServer

/// The web dashboard at `/dashboard/`: a few static files of our own (HTML, CSS, JavaScript),
/// embedded in the binary and served read-only with strict security headers. The page signs in
/// with an API token kept in `sessionStorage` and calls the management API with it as a bearer
/// header, so the dashboard itself holds no secret and needs no token.
///
/// - `/dashboard` redirects (308) to `/dashboard/`, which is `index.html`;
/// - `/dashboard/NAME` is an embedded file, anything else under `/dashboard/` is 404 (names are
///   looked up, never resolved as paths, so `..` or `%2e%2e` cannot reach another file);
/// - GET and HEAD only (405 otherwise); `ETag` with `If-None-Match` (304); `Cache-Control: no-cache`.
///
/// ```swift
/// if let response = Dashboard.respond(to: request) { return .respond(response) }
/// ```
public enum Dashboard {
    /// What every dashboard response carries: a policy that allows only the dashboard's own
    /// files (no inline script or style, no framing, no other origin), no MIME sniffing, no
    /// referrer, no framing for older browsers.
    public static let securityHeaders: [(name: String, value: String)] = [
        (
            "Content-Security-Policy",
            "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
                + "object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
        ),
        ("X-Content-Type-Options", "nosniff"),
        ("Referrer-Policy", "no-referrer"),
        ("X-Frame-Options", "DENY"),
        ("Cross-Origin-Opener-Policy", "same-origin"),
        ("Cross-Origin-Resource-Policy", "same-origin"),
    ]

    /// The route name in metrics and the access log.
    static let routeName = "dashboard"

    /// Answers `/dashboard` and `/dashboard/…`; nil for any other path.
    public static func respond(to request: HTTPRequest) -> HTTPResponse? {
        guard request.path == "/dashboard" || request.path.hasPrefix("/dashboard/") else { return nil }
        var response = answer(request)
        response.headers += securityHeaders
        response.route = routeName
        return response
    }

    static func answer(_ request: HTTPRequest) -> HTTPResponse {
        guard request.method == "GET" || request.method == "HEAD" else {
            var r = HTTPResponse.error(405, code: .methodNotAllowed, "the dashboard is read-only: use GET or HEAD")
            r.headers.append(("Allow", "GET, HEAD"))
            return r
        }
        if request.path == "/dashboard" {
            return HTTPResponse(
                status: 308, headers: [("Location", "/dashboard/"), ("Content-Type", "text/plain; charset=utf-8")],
                body: .bytes(Array("/dashboard/\n".utf8)))
        }
        let name = String(request.path.dropFirst("/dashboard/".count))
        guard let asset = DashboardAsset.named(name.isEmpty ? "index.html" : name) else {
            return .error(
                404, code: .notFound, "no such dashboard file", context: request.path, hint: "open /dashboard/")
        }
        let headers: [(name: String, value: String)] = [
            ("Content-Type", asset.contentType), ("ETag", asset.etag), ("Cache-Control", "no-cache"),
        ]
        if let match = request.header("If-None-Match"),
            match.trimmingCharacters(in: .whitespaces) == "*"
                || StaticTree.entityTags(match).contains(where: { $0 == asset.etag || $0 == "W/" + asset.etag })
        {
            return HTTPResponse(
                status: 304, headers: headers, body: .representation(length: UInt64(asset.bytes.count)))
        }
        return HTTPResponse(status: 200, headers: headers, body: .bytes(asset.bytes))
    }
}
