import BacklotBasics
import Foundation

/// An HTTP request as the server's handlers see it: the head only (bodies are streamed through an
/// ``HTTPBodyReceiver`` or buffered by ``HTTPRoute/buffer(limit:then:)``).
public struct HTTPRequest: Sendable {
    public let method: String
    /// The decoded path, without the query.
    public let path: String
    /// Header values by lowercased name.
    public let headers: [String: String]
    /// Query arguments (decoded).
    public let query: [String: String]
    /// The client's address, for the access log.
    public let remoteAddress: String
    /// This request's number in its server, from 1, the same for the handler and the observer that
    /// sees its end (what ties work taken at the start of a request to its end); 0 for a request
    /// the server refused before any handler saw it, or one made elsewhere.
    public let number: UInt64

    public init(
        method: String, path: String, headers: [String: String] = [:], query: [String: String] = [:],
        remoteAddress: String = "", number: UInt64 = 0
    ) {
        self.method = method
        self.path = path
        self.headers = headers
        self.query = query
        self.remoteAddress = remoteAddress
        self.number = number
    }

    /// A header's value, by case-insensitive name.
    public func header(_ name: String) -> String? { headers[Self.fieldKey(name)] }

    /// `name` with its ASCII letters in lower case, the key ``headers`` holds it under. Field names
    /// are ASCII tokens compared without case (RFC 9110 §5.1), so only ASCII letters are folded
    /// (and a name already in lower case, as most are, is returned as it is).
    static func fieldKey(_ name: String) -> String {
        guard name.utf8.contains(where: { (0x41...0x5A).contains($0) }) else { return name }
        // Written straight into the string (a short name stays inline: no allocation).
        return String(unsafeUninitializedCapacity: name.utf8.count) { buffer in
            for (i, byte) in name.utf8.enumerated() { buffer[i] = (0x41...0x5A).contains(byte) ? byte | 0x20 : byte }
            return name.utf8.count
        }
    }
}

/// An HTTP response: status, headers and a body from memory or from a file range.
public struct HTTPResponse: Sendable {
    public enum Body: Sendable {
        case empty
        case bytes([UInt8])
        /// `length` bytes of the file at `path` from `offset` (a large one copied in blocks, or past
        /// ``FileBody``'s budget sent from the descriptor: sendfile(2) on plain HTTP).
        case file(path: String, offset: UInt64, length: UInt64)
        /// `length` bytes of an open file from `offset`; the server takes (and closes) the descriptor.
        case descriptor(Int32, offset: UInt64, length: UInt64)
        /// No content, for a 304: the headers describe a representation of `length` bytes, so the
        /// `Content-Length` sent is that length (RFC 9110 §8.6), never 0.
        case representation(length: UInt64)

        var count: UInt64 {
            switch self {
            case .empty, .representation: 0
            case .bytes(let b): UInt64(b.count)
            case .file(_, _, let length), .descriptor(_, _, let length): length
            }
        }
    }

    public var status: Int
    public var headers: [(name: String, value: String)]
    public var body: Body
    /// A low-cardinality name of what answered ("static", "api"), for metrics.
    public var route: String

    public init(
        status: Int, headers: [(name: String, value: String)] = [], body: Body = .empty, route: String = "other"
    ) {
        self.status = status
        self.headers = headers
        self.body = body
        self.route = route
    }

    /// A JSON error body: `{"error": {"code": …, "message": …, "context": … or null, "hint": … or null}}`.
    /// The message says what is wrong without repeating `context`, the thing it is about.
    public static func error(
        _ status: Int, code: BacklotError.Code, _ message: String, context: String? = nil, hint: String? = nil,
        route: String = "other"
    ) -> HTTPResponse {
        let text =
            "{\"error\":{\"code\":\(jsonString(code.name)),\"message\":\(jsonString(message)),"
            + "\"context\":\(context.map(jsonString) ?? "null"),\"hint\":\(hint.map(jsonString) ?? "null")}}\n"
        return HTTPResponse(
            status: status, headers: [("Content-Type", "application/json")], body: .bytes(Array(text.utf8)),
            route: route)
    }

    /// A JSON body.
    public static func json(_ status: Int, _ text: String, route: String = "api") -> HTTPResponse {
        HTTPResponse(
            status: status, headers: [("Content-Type", "application/json")], body: .bytes(Array((text + "\n").utf8)),
            route: route)
    }

    public static func jsonString(_ s: String) -> String {
        var out = "\""
        for u in s.unicodeScalars {
            switch u {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case _ where u.value < 0x20: out += String(format: "\\u%04x", u.value)
            default: out.unicodeScalars.append(u)
            }
        }
        return out + "\""
    }
}

/// Receives a request body as it arrives (uploads), then answers.
public protocol HTTPBodyReceiver: AnyObject, Sendable {
    /// Takes the next bytes. Throwing answers with the error's response and drops the rest.
    func receive(_ bytes: UnsafeRawBufferPointer) throws
    /// The whole body arrived: answer.
    func finish() -> HTTPResponse
    /// The connection ended before the body did (what arrived may be kept, for resuming).
    func abort()
}

/// How a handler takes a request.
public enum HTTPRoute: Sendable {
    /// Answer now (a request body, if any, is discarded).
    case respond(HTTPResponse)
    /// Stream the body into a receiver.
    case receive(any HTTPBodyReceiver)
    /// Buffer a body of at most `limit` bytes (413 beyond), then answer.
    case buffer(limit: Int, then: @Sendable ([UInt8]) -> HTTPResponse)
}

/// An error that carries the HTTP response to send.
public struct HTTPError: Error, Sendable {
    public let response: HTTPResponse
    public init(
        _ status: Int, code: BacklotError.Code, _ message: String, context: String? = nil, hint: String? = nil
    ) {
        response = .error(status, code: code, message, context: context, hint: hint)
    }
    /// An error answered with `response` as it is.
    public init(response: HTTPResponse) { self.response = response }
}
