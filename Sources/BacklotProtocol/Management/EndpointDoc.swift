/// What the OpenAPI document says of one endpoint, declared with it in ``API/endpoints``: the
/// document is generated from that list and nothing else.
///
/// The statuses every route shares are added by ``OpenAPIDocument``: 400, 404, 405 (with
/// `Allow`) and 503 (with `Retry-After`) on every route of the database; 401 (with
/// `WWW-Authenticate`) and 403 on every route that needs a token; 413 on every route with a JSON
/// body. A route lists the rest: its successes, its 409s, its own 403s and 413s.
///
/// ```swift
/// EndpointDoc("createApp", tag: "apps", "Create an app.", body: .ref("AppCreate"),
///          responses: [.init(201, "The app.", .ref("App")), .init(409, "The app exists already.")])
/// ```
public struct EndpointDoc: Sendable {
    /// One response a route can give.
    public struct Response: Sendable {
        public let status: Int
        public let description: String
        /// nil: the error body (``APISchemas`` `Error`).
        public let schema: JSONSchema?
        /// Response headers the route sends with it: name, description, schema.
        public let headers: [(name: String, description: String, schema: JSONSchema)]
        /// OpenAPI links from this response: name, the operation it feeds, its parameters
        /// (runtime expressions), and a request body with expressions in it.
        public let links: [Link]

        public init(
            _ status: Int, _ description: String, _ schema: JSONSchema? = nil,
            headers: [(name: String, description: String, schema: JSONSchema)] = [], links: [Link] = []
        ) {
            self.status = status
            self.description = description
            self.schema = schema
            self.headers = headers
            self.links = links
        }
    }

    /// An OpenAPI link: how a response's values feed another operation (stateful testing follows them).
    public struct Link: Sendable {
        public let name: String
        public let operationID: String
        public let parameters: [String: String]
        public let requestBody: [String: String]?

        public init(
            _ name: String, to operationID: String, parameters: [String: String], requestBody: [String: String]? = nil
        ) {
            self.name = name
            self.operationID = operationID
            self.parameters = parameters
            self.requestBody = requestBody
        }
    }

    /// A query or header parameter.
    public struct Parameter: Sendable {
        public let name: String
        public let location: String
        public let description: String
        public let schema: JSONSchema
        public let required: Bool

        public init(query name: String, _ description: String, _ schema: JSONSchema) {
            self.name = name
            location = "query"
            self.description = description
            self.schema = schema
            required = false
        }

        public init(header name: String, _ description: String, _ schema: JSONSchema) {
            self.name = name
            location = "header"
            self.description = description
            self.schema = schema
            required = false
        }
    }

    public let operationID: String
    public let tag: String
    public let summary: String
    public let parameters: [Parameter]
    /// The JSON body's schema (nil: no JSON body).
    public let body: JSONSchema?
    /// A raw body instead (the archive upload): its content type.
    public let rawBody: String?
    public let responses: [Response]
    /// Whether the route reads the database (503 with `Retry-After` while it is out of reach).
    public let usesDatabase: Bool

    public init(
        _ operationID: String, tag: String, _ summary: String, parameters: [Parameter] = [], body: JSONSchema? = nil,
        rawBody: String? = nil, usesDatabase: Bool = true, responses: [Response]
    ) {
        self.operationID = operationID
        self.tag = tag
        self.summary = summary
        self.parameters = parameters
        self.body = body
        self.rawBody = rawBody
        self.responses = responses
        self.usesDatabase = usesDatabase
    }
}
