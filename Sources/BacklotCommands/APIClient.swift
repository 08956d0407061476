import BacklotBasics
import BacklotHTTPClient
import BacklotJSON
import Foundation

/// The CLI's side of the management API, connected with the options of ``ServerOptions``.
struct APIClient {
    let server: String
    let token: String
    let http: HTTPClient

    /// The server group's options, to list in a command's spec.
    static var options: [any OptionDeclaration] { ServerOptions.all }

    init(_ arguments: ParsedArguments, io: any CommandIO, command: String) throws {
        let server = arguments[ServerOptions.server]
        token = try ServerOptions.resolveToken(arguments, io: io, command: command)
        self.server = server.hasSuffix("/") ? String(server.dropLast()) : server
        http = HTTPClient(caFile: arguments[ServerOptions.ca])
    }

    /// Calls a route; returns the parsed JSON body of a 2xx answer (or of a status in `accept`),
    /// throws the server's error otherwise, with the server's context and hint.
    @discardableResult
    func call(
        _ method: String, _ path: String, json: JSONNode? = nil, accept: Set<Int> = [], body: HTTPClient.Body? = nil,
        headers: [String: String] = [:], progress: (@Sendable (UInt64, UInt64) -> Void)? = nil
    ) throws -> (status: Int, json: JSONNode) {
        var h = headers
        h["Authorization"] = "Bearer \(token)"
        var payload = body
        if let json {
            h["Content-Type"] = "application/json"
            payload = .bytes(Array(json.serialized().utf8))
        }
        let r = try http.send(method, server + path, headers: h, body: payload, progress: progress)
        let parsed =
            (try? JSONReader(source: "response", allowsComments: false, allowsTrailingCommas: false).read(r.body).root)
            ?? .null
        guard (200..<300).contains(r.status) || accept.contains(r.status) else {
            let error = parsed["error"]
            let message = error?["message"]?.stringValue ?? r.text
            let kind: BacklotError.Code =
                switch r.status {
                case 400, 422: .invalidInput
                case 401, 403: .forbidden
                case 404: .notFound
                case 409: .conflict
                case 413: .quotaExceeded
                case 503: .unavailable
                default: .io
                }
            // The server's own code (fourEyes, unauthorized, …) is kept for 4xx answers, with the
            // exit status of its kind; a server that cannot answer now is `unavailable`, whatever it says.
            let serverCode = error?["code"]?.stringValue.flatMap { $0.isEmpty || $0.count > 64 ? nil : $0 }
            let code =
                (400..<500).contains(r.status) && serverCode != nil
                ? BacklotError.Code(serverCode!, isInvalidInput: kind.isInvalidInput) : kind
            let hint =
                error?["hint"]?.stringValue
                ?? (r.status == 401 ? "check the token (--token-file, $BACKLOT_TOKEN or the profile)" : nil)
            throw BacklotError(
                code, "the server answered \(r.status): \(message)",
                context: error?["context"]?.stringValue ?? "\(method) \(path)",
                hint: hint)
        }
        return (r.status, parsed)
    }

    static func segment(_ s: String) -> String {
        s.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._"))) ?? s
    }

    /// `/api/apps/APP`.
    static func app(_ app: String) -> String { "/api/apps/\(segment(app))" }
    /// `/api/apps/APP/packs/PACK`.
    static func pack(_ app: String, _ pack: String) -> String { "/api/apps/\(segment(app))/packs/\(segment(pack))" }
}
