import Foundation

/// One operation of the management API (`/api/…`): its method, path template, the role its
/// token needs, what the OpenAPI document says of it, and the types of its JSON body and of its
/// answer. The server's route table, the OpenAPI document and the CLI's client are all made from
/// ``API/endpoints``: none of them spells a path or a field of its own.
///
/// ```swift
/// let path = API.listPacks.path([.app: "com.example.game"])   // "/api/apps/com.example.game/packs"
/// let packs = try JSONDecoder().decode(API.listPacks.responseType, from: body)
/// ```
public struct Endpoint<Request: Sendable, Response: Sendable>: EndpointDescription {
    public let method: String
    public let template: String
    public let role: Role?
    public let doc: EndpointDoc

    public init(_ method: String, _ template: String, role: Role?, doc: EndpointDoc) {
        self.method = method
        self.template = template
        self.role = role
        self.doc = doc
    }

    /// The type the answer's body decodes as.
    public var responseType: Response.Type { Response.self }

    public var bodyType: Any.Type { Request.self }
    public var answerType: Any.Type { Response.self }
}

/// What every ``Endpoint`` says of itself, whatever its body and answer types.
public protocol EndpointDescription: Sendable {
    /// `GET`, `POST`, `PATCH`, `PUT` or `DELETE`.
    var method: String { get }
    /// The path with `{name}` parameters: `/api/apps/{app}/packs`.
    var template: String { get }
    /// The role the caller's token needs; nil: no token.
    var role: Role? { get }
    var doc: EndpointDoc { get }
    /// The `Codable` type of its JSON body (``NoBody`` when it takes none) and of its answer.
    var bodyType: Any.Type { get }
    var answerType: Any.Type { get }
}

extension EndpointDescription {
    /// The OpenAPI operation ID, unique among ``API/endpoints``.
    public var operationID: String { doc.operationID }

    /// The template's parameter names as spelled in it, in order (`["app", "pack"]`); each is an
    /// ``API/PathParameter``.
    public var parameterNames: [String] {
        template.split(separator: "/").filter { $0.hasPrefix("{") }.map { String($0.dropFirst().dropLast()) }
    }

    /// The path with each `{name}` replaced by `parameters[name]`, percent-encoded as one segment
    /// (only letters, digits, `-`, `.` and `_` stay as they are).
    /// - Precondition: `parameters` names every parameter of the template (a programming error otherwise).
    public func path(_ parameters: [API.PathParameter: String] = [:]) -> String {
        let allowed = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "-._"))
        return template.split(separator: "/", omittingEmptySubsequences: false).map { part -> String in
            guard part.hasPrefix("{") else { return String(part) }
            let name = String(part.dropFirst().dropLast())
            guard let value = API.PathParameter(rawValue: name).flatMap({ parameters[$0] }) else {
                preconditionFailure("\(operationID): no value for {\(name)}")
            }
            return value.addingPercentEncoding(withAllowedCharacters: allowed) ?? value
        }.joined(separator: "/")
    }

    /// The parameters of `segments` (a request path split at '/') when it matches the template;
    /// nil otherwise (and for a template naming a parameter that is no ``API/PathParameter``).
    public func match(_ segments: [String]) -> [API.PathParameter: String]? {
        let parts = template.split(separator: "/").map(String.init)
        guard parts.count == segments.count else { return nil }
        var parameters: [API.PathParameter: String] = [:]
        for (p, s) in zip(parts, segments) {
            if p.hasPrefix("{") {
                guard let name = API.PathParameter(rawValue: String(p.dropFirst().dropLast())) else { return nil }
                parameters[name] = s
            } else if p != s {
                return nil
            }
        }
        return parameters
    }
}

/// The body of an endpoint that takes none, and the answer of one whose body is not JSON.
public struct NoBody: Codable, Sendable, Hashable {
    public init() {}
}
