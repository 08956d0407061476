import Foundation

/// The OpenAPI 3.1 document served at `GET /api/openapi.json` and kept as docs/openapi.json,
/// generated from ``API/endpoints`` (each endpoint's ``EndpointDoc``): the endpoint list, from which the
/// server's route table is made too, is its only source. Encoded once with `JSONEncoder` (sorted keys, pretty-printed).
///
/// ```swift
/// let json = String(decoding: OpenAPIDocument.bytes, as: UTF8.self)
/// ```
public enum OpenAPIDocument {
    /// The document's bytes (with a final newline).
    public static let bytes: [UInt8] = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        // Every part is a value this module builds: encoding cannot fail.
        return Array((try? encoder.encode(document(API.endpoints))) ?? Data("{}".utf8)) + [0x0A]
    }()

    /// The document as text.
    public static var text: String { String(decoding: bytes, as: UTF8.self) }

    struct Document: Encodable {
        let openapi = "3.1.0"
        let info: [String: String]
        let paths: [String: [String: Operation]]
        let components: Components
    }

    struct Components: Encodable {
        let schemas: [String: JSONSchema]
        let securitySchemes: [String: [String: String]]
    }

    struct Operation: Encodable {
        let operationId: String
        let tags: [String]
        let summary: String
        let parameters: [Parameter]?
        let requestBody: RequestBody?
        let responses: [String: Response]
        let security: [[String: [String]]]
    }

    struct Parameter: Encodable {
        let name: String
        let `in`: String
        let required: Bool
        let description: String
        let schema: JSONSchema
    }

    struct RequestBody: Encodable {
        let required = true
        let content: [String: MediaType]
    }

    struct MediaType: Encodable {
        let schema: JSONSchema
    }

    struct Header: Encodable {
        let description: String
        let required: Bool
        let schema: JSONSchema
    }

    struct Link: Encodable {
        let operationId: String
        let parameters: [String: String]
        let requestBody: [String: String]?
    }

    struct Response: Encodable {
        let description: String
        let headers: [String: Header]?
        let content: [String: MediaType]?
        let links: [String: Link]?
    }

    static let description = """
        Apps, asset packs, versions (upload, processing), releases per channel with approvals, staged rollouts and rollbacks, \
        and tokens. JSON over HTTPS with bearer tokens (roles admin, uploader, reviewer, reader). Every error is \
        {"error":{"code","message","context","hint"}}. A method a path does not have gets 405 with Allow. Published catalogs \
        and archives are static files outside /api (docs/protocol.md). Generated from the endpoint list the server's route table is made of.
        """

    static func document(_ routes: [any EndpointDescription]) -> Document {
        var paths: [String: [String: Operation]] = [:]
        for route in routes {
            paths[route.template, default: [:]][route.method.lowercased()] = operation(
                route, allowed: routes.filter { $0.template == route.template }.map(\.method))
        }
        return Document(
            info: ["title": "Backlot management API", "version": "2", "description": description], paths: paths,
            components: Components(
                schemas: APISchemas.all, securitySchemes: ["bearer": ["type": "http", "scheme": "bearer"]]))
    }

    static let error = JSONSchema.ref("Error")

    static func operation(_ route: any EndpointDescription, allowed: [String]) -> Operation {
        let doc = route.doc
        var parameters = pathParameters(route.template)
        parameters += doc.parameters.map {
            Parameter(
                name: $0.name, in: $0.location, required: $0.required, description: $0.description, schema: $0.schema)
        }
        var responses: [String: Response] = [:]
        func add(
            _ status: Int, _ description: String, _ schema: JSONSchema? = nil, headers: [String: Header] = [:],
            links: [EndpointDoc.Link] = []
        ) {
            let key = String(status)
            if let existing = responses[key] {
                // Two causes of one status: one description naming both.
                responses[key] = Response(
                    description: existing.description + " Or: " + description, headers: existing.headers,
                    content: existing.content, links: existing.links)
                return
            }
            let content = (schema ?? (status >= 400 ? error : nil)).map { ["application/json": MediaType(schema: $0)] }
            let linked =
                links.isEmpty
                ? nil
                : Dictionary(
                    uniqueKeysWithValues: links.map {
                        (
                            $0.name,
                            Link(operationId: $0.operationID, parameters: $0.parameters, requestBody: $0.requestBody)
                        )
                    })
            responses[key] = Response(
                description: description, headers: headers.isEmpty ? nil : headers, content: content, links: linked)
        }
        for r in doc.responses {
            var headers: [String: Header] = [:]
            for h in r.headers {
                headers[h.name] = Header(description: h.description, required: true, schema: h.schema)
            }
            add(r.status, r.description, r.schema, headers: headers, links: r.links)
        }
        if doc.usesDatabase {
            add(400, "A path parameter, query parameter, header or body that is not valid (the message names it).")
            add(404, "No such app, pack, version, request or token; or no such API route.")
            add(
                405, "The path exists with other methods (Allow lists them).",
                headers: ["Allow": Header(description: "The methods of this path.", required: true, schema: .string())])
            add(
                503, "The database or the object store is out of reach; retry after the given seconds.",
                headers: [
                    "Retry-After": Header(
                        description: "Seconds to wait.", required: true, schema: .string(pattern: "^[0-9]+$"))
                ])
        }
        if route.role != nil {
            add(
                401, "No token, or one that is unknown, expired or revoked.",
                headers: ["WWW-Authenticate": Header(description: "Bearer.", required: true, schema: .string())])
            add(403, "The token's role does not include \(route.role?.rawValue ?? "") (the route needs it).")
        }
        var requestBody: RequestBody? = nil
        if let body = doc.body {
            requestBody = RequestBody(content: ["application/json": MediaType(schema: body)])
            add(413, "The body is larger than \(API.Limits.bodyBytes) bytes.")
            add(415, "A Content-Type other than application/json.")
        } else if let raw = doc.rawBody {
            requestBody = RequestBody(content: [raw: MediaType(schema: .binary)])
            add(415, "A Content-Type other than \(raw).")
        }
        return Operation(
            operationId: doc.operationID, tags: [doc.tag], summary: doc.summary,
            parameters: parameters.isEmpty ? nil : parameters,
            requestBody: requestBody, responses: responses, security: route.role == nil ? [] : [["bearer": []]])
    }

    /// `{app}` and `{pack}` are IDs, `{version}` and `{id}` whole numbers from 1, `{channel}` a channel name.
    static func pathParameters(_ template: String) -> [Parameter] {
        template.split(separator: "/").filter { $0.hasPrefix("{") }.map { part in
            let name = String(part.dropFirst().dropLast())
            switch name {
            case "app":
                return Parameter(
                    name: name, in: "path", required: true, description: "The app's ID.", schema: APISchemas.id)
            case "pack":
                return Parameter(
                    name: name, in: "path", required: true, description: "The pack's ID.", schema: APISchemas.id)
            case "channel":
                return Parameter(
                    name: name, in: "path", required: true, description: "The channel.", schema: APISchemas.channel)
            default:
                return Parameter(
                    name: name, in: "path", required: true, description: "A whole number from 1.",
                    schema: APISchemas.positive)
            }
        }
    }
}
