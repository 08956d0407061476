import BacklotBasics
import BacklotHTTPClient
import BacklotJSON
import BacklotProtocol
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

    /// A 2xx answer (or one of a status the call accepts): its status and body.
    struct Answer {
        let status: Int
        let body: [UInt8]
        let route: String

        /// The body as `T`, through `JSONDecoder`.
        /// - Throws: ``BacklotError/Code/io`` naming the field that is not what this backlot expects.
        func decode<T: Decodable>(_ type: T.Type) throws -> T {
            do {
                return try JSONDecoder().decode(T.self, from: Data(body))
            } catch let error as DecodingError {
                var what = error.explained
                // The toolchain's decoder reports a number that does not fit its field (a negative
                // size, a fraction, 2^64) as JSON that does not parse, with no field named.
                if case .dataCorrupted(let c) = error, c.codingPath.isEmpty,
                    (try? JSONReader(source: route, allowsComments: false, allowsTrailingCommas: false).read(body))
                        != nil
                {
                    what = "a number in it does not fit its field (negative, fractional or too large)"
                }
                throw BacklotError(
                    .io, "the server's answer is not what this backlot expects: \(what)", context: route,
                    hint: "is it a Backlot server of the same version? (backlot --version)")
            }
        }
    }

    /// Calls a route with `json` (encoded with `JSONEncoder`) or `body`; returns a 2xx answer (or
    /// one of a status in `accept`), throws the server's error otherwise, with its context and hint.
    @discardableResult
    func call(
        _ method: String, _ path: String, json: (any Encodable)? = nil, accept: Set<Int> = [],
        body: HTTPClient.Body? = nil, headers: [String: String] = [:],
        progress: (@Sendable (UInt64, UInt64) -> Void)? = nil
    ) throws -> Answer {
        var h = headers
        h["Authorization"] = "Bearer \(token)"
        var payload = body
        if let json {
            h["Content-Type"] = "application/json"
            payload = .bytes(Array(try JSONEncoder().encode(json)))
        }
        let r = try http.send(method, server + path, headers: h, body: payload, progress: progress)
        guard (200..<300).contains(r.status) || accept.contains(r.status) else {
            let error = (try? JSONDecoder().decode(API.ErrorAnswer.self, from: Data(r.body)))?.error
            let message = error?.message ?? r.text
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
            let serverCode = error.map(\.code).flatMap { $0.isEmpty || $0.count > 64 ? nil : $0 }
            let code =
                (400..<500).contains(r.status) && serverCode != nil
                ? BacklotError.Code(serverCode!, isInvalidInput: kind.isInvalidInput) : kind
            let hint =
                error?.hint ?? (r.status == 401 ? "check the token (--token-file, $BACKLOT_TOKEN or the profile)" : nil)
            throw BacklotError(
                code, "the server answered \(r.status): \(message)", context: error?.context ?? "\(method) \(path)",
                hint: hint)
        }
        return Answer(status: r.status, body: r.body, route: "\(method) \(path)")
    }

    /// Calls `endpoint` with the path's `parameters`, the `query` (each value percent-encoded)
    /// and `body`; returns its 2xx answer (or one of a status in `accept`) undecoded.
    @discardableResult
    func call<Request: Encodable, Response>(
        _ endpoint: Endpoint<Request, Response>, _ parameters: [API.PathParameter: String] = [:],
        query: [(name: String, value: String)] = [], body: Request? = nil, accept: Set<Int> = []
    ) throws -> Answer {
        try call(endpoint.method, endpoint.path(parameters) + Self.query(query), json: body, accept: accept)
    }

    /// Calls `endpoint` (``call(_:_:query:body:accept:)``) and decodes its 2xx answer as the endpoint's answer type.
    func send<Request: Encodable, Response: Decodable>(
        _ endpoint: Endpoint<Request, Response>, _ parameters: [API.PathParameter: String] = [:],
        query: [(name: String, value: String)] = [], body: Request? = nil
    ) throws -> Response {
        try call(endpoint, parameters, query: query, body: body).decode(Response.self)
    }

    /// `?name=value&…`, each value percent-encoded; "" for none.
    static func query(_ items: [(name: String, value: String)]) -> String {
        let allowed = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "-._"))
        guard !items.isEmpty else { return "" }
        return "?"
            + items.map { "\($0.name)=\($0.value.addingPercentEncoding(withAllowedCharacters: allowed) ?? $0.value)" }
            .joined(separator: "&")
    }
}
