import BacklotBasics
import BacklotHTTPClient
import BacklotJSON
import Foundation

/// The CLI's side of the management API: `--server`, `--token` (or `BACKLOT_TOKEN`), `--ca`.
struct APIClient {
    let server: String
    let token: String
    let http: HTTPClient

    static let options: [CommandSpec.Option] = [
        .init("server", value: "URL", help: "The server's base URL, such as https://127.0.0.1:8443 (required)."),
        .init("token", value: "TOKEN", help: "An API token (default: $BACKLOT_TOKEN)."),
        .init("ca", value: "FILE", help: "A CA certificate to trust (the server's DIR/tls/ca.pem with --tls auto)."),
    ]

    init(_ arguments: ParsedArguments, command: String) throws {
        guard let server = arguments.values["server"] else {
            throw BacklotError(.usage, "the option --server URL is required", context: "backlot \(command)", hint: "give the URL `backlot serve` printed")
        }
        guard let token = arguments.values["token"] ?? ProcessInfo.processInfo.environment["BACKLOT_TOKEN"], !token.isEmpty else {
            throw BacklotError(.usage, "no API token", context: "backlot \(command)", hint: "pass --token TOKEN or set BACKLOT_TOKEN (the admin token is in the server's DIR/admin-token)")
        }
        self.server = server.hasSuffix("/") ? String(server.dropLast()) : server
        self.token = token
        http = HTTPClient(caFile: arguments.values["ca"])
    }

    /// Calls a route; returns the parsed JSON body of a 2xx answer, throws the server's error otherwise.
    @discardableResult
    func call(_ method: String, _ path: String, json: JSONNode? = nil, accept: Set<Int> = [], body: HTTPClient.Body? = nil,
              headers: [String: String] = [:], progress: (@Sendable (UInt64, UInt64) -> Void)? = nil) throws -> (status: Int, json: JSONNode) {
        var h = headers
        h["Authorization"] = "Bearer \(token)"
        var payload = body
        if let json {
            h["Content-Type"] = "application/json"
            payload = .bytes(Array(json.serialized().utf8))
        }
        let r = try http.send(method, server + path, headers: h, body: payload, progress: progress)
        let parsed = (try? JSONReader(source: "response", allowsComments: false, allowsTrailingCommas: false).read(r.body).root) ?? .null
        guard (200..<300).contains(r.status) || accept.contains(r.status) else {
            let message = parsed["error"]?["message"]?.stringValue ?? r.text
            let code: BacklotError.Code = switch r.status {
            case 400: .invalidInput
            case 401, 403: .forbidden
            case 404: .notFound
            case 409: .conflict
            case 413: .quotaExceeded
            default: .io
            }
            throw BacklotError(code, "the server answered \(r.status): \(message)", context: "\(method) \(path)",
                               hint: r.status == 401 ? "check --token or BACKLOT_TOKEN" : nil)
        }
        return (r.status, parsed)
    }

    static func segment(_ s: String) -> String {
        s.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._"))) ?? s
    }
}
