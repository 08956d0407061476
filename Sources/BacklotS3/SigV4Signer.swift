import BacklotBasics
import BacklotCrypto
import Foundation

/// AWS Signature Version 4 (`AWS4-HMAC-SHA256`), for requests signed in the `Authorization` header.
///
/// The one place Backlot signs requests. It canonicalises what most hand-written signers get
/// wrong: the query string is sorted by encoded name then value with explicit empty values
/// (`uploads=`), names and values are percent-encoded with uppercase hex except the unreserved
/// characters, header values are trimmed and inner runs of spaces collapsed, duplicate headers
/// joined with commas in order. The path is signed exactly as it is sent (S3 encodes it once and
/// never normalises it), so build it with ``encodePath(_:)``.
///
/// ```swift
/// let signer = SigV4Signer(credentials: credentials, region: "us-east-1")
/// let signed = signer.sign(.init(method: "GET", path: "/bucket/key", query: [("list-type", "2")],
///                                headers: [("Host", "127.0.0.1:7480")], payloadHash: SigV4Signer.emptyPayloadHash),
///                          at: Date())
/// // send signed.headers (they include Authorization, x-amz-date and x-amz-content-sha256)
/// ```
public struct SigV4Signer: Sendable {
    /// What is signed: the request as it goes on the wire.
    public struct Request: Sendable {
        public var method: String
        /// The path as sent, already percent-encoded (``encodePath(_:)``).
        public var path: String
        /// Query parameters, not encoded; the order does not matter.
        public var query: [(String, String)]
        /// Headers to send and sign, `Host` among them (any case; duplicates allowed).
        public var headers: [(String, String)]
        /// The payload's SHA-256 as lowercase hex, or ``SigV4Signer/unsignedPayload``.
        public var payloadHash: String

        public init(
            method: String, path: String, query: [(String, String)] = [], headers: [(String, String)],
            payloadHash: String
        ) {
            self.method = method
            self.path = path
            self.query = query
            self.headers = headers
            self.payloadHash = payloadHash
        }
    }

    /// A signed request's parts, each kept so that a test (or a puzzled operator) can see which line differs.
    public struct Signed: Sendable {
        public let canonicalRequest: String
        public let stringToSign: String
        /// 64 hex digits.
        public let signature: String
        /// The `Authorization` header's value.
        public let authorization: String
        /// The headers to send: the request's, plus `x-amz-date`, `x-amz-content-sha256` (when the
        /// signer adds it), `x-amz-security-token` (with a session token) and `Authorization`.
        public let headers: [(String, String)]
        /// The query string to send, in canonical form (what was signed), without the `?`.
        public let query: String
    }

    public var credentials: S3Credentials
    public var region: String
    public var service: String
    /// Whether `x-amz-content-sha256` is added and signed (S3 requires it; the generic AWS test suite has none).
    public var addsPayloadHashHeader: Bool

    /// The SHA-256 of nothing: the payload hash of a request without a body.
    public static let emptyPayloadHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    /// The payload hash that says the body is not signed.
    public static let unsignedPayload = "UNSIGNED-PAYLOAD"

    public init(credentials: S3Credentials, region: String, service: String = "s3", addsPayloadHashHeader: Bool = true)
    {
        self.credentials = credentials
        self.region = region
        self.service = service
        self.addsPayloadHashHeader = addsPayloadHashHeader
    }

    /// Signs `request` as made at `date`.
    public func sign(_ request: Request, at date: Date) -> Signed {
        let (day, stamp) = Self.timestamps(date)
        var headers = request.headers
        headers.append(("x-amz-date", stamp))
        if addsPayloadHashHeader && !headers.contains(where: { $0.0.lowercased() == "x-amz-content-sha256" }) {
            headers.append(("x-amz-content-sha256", request.payloadHash))
        }
        if let token = credentials.sessionToken { headers.append(("x-amz-security-token", token)) }

        let (canonicalHeaders, signedHeaders) = Self.canonicalHeaders(headers)
        let query = Self.canonicalQuery(request.query)
        let canonicalRequest = [
            request.method, request.path.isEmpty ? "/" : request.path, query,
            canonicalHeaders, signedHeaders, request.payloadHash,
        ].joined(separator: "\n")
        let scope = "\(day)/\(region)/\(service)/aws4_request"
        let stringToSign = ["AWS4-HMAC-SHA256", stamp, scope, SHA256.hash(Array(canonicalRequest.utf8)).hex].joined(
            separator: "\n")

        var key = HMACSHA256.authenticate(day, key: Array("AWS4\(credentials.secretAccessKey)".utf8))
        for part in [region, service, "aws4_request"] { key = HMACSHA256.authenticate(part, key: key) }
        let signature = Self.hex(HMACSHA256.authenticate(stringToSign, key: key))
        let authorization =
            "AWS4-HMAC-SHA256 Credential=\(credentials.accessKeyID)/\(scope), SignedHeaders=\(signedHeaders), Signature=\(signature)"
        headers.append(("Authorization", authorization))
        return Signed(
            canonicalRequest: canonicalRequest, stringToSign: stringToSign, signature: signature,
            authorization: authorization, headers: headers, query: query)
    }
}

extension SigV4Signer {
    /// `YYYYMMDD` and `YYYYMMDDTHHMMSSZ` of `date` in UTC.
    static func timestamps(_ date: Date) -> (day: String, stamp: String) {
        var t = time_t(date.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        gmtime_r(&t, &parts)
        func two(_ v: Int32) -> String { v < 10 ? "0\(v)" : "\(v)" }
        let day = "\(parts.tm_year + 1900)\(two(parts.tm_mon + 1))\(two(parts.tm_mday))"
        return (day, "\(day)T\(two(parts.tm_hour))\(two(parts.tm_min))\(two(parts.tm_sec))Z")
    }

    /// Canonical headers (`name:value\n` each, sorted by lowercase name, values trimmed with inner
    /// runs of spaces collapsed, duplicates joined with commas in order) and the signed-header list.
    static func canonicalHeaders(_ headers: [(String, String)]) -> (String, String) {
        var byName: [String: [String]] = [:]
        for (name, value) in headers { byName[name.lowercased(), default: []].append(normalise(value)) }
        let names = byName.keys.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
        let text = names.map { "\($0):\(byName[$0]!.joined(separator: ","))\n" }.joined()
        return (text, names.joined(separator: ";"))
    }

    /// A header value trimmed, with every run of spaces and tabs inside made one space.
    static func normalise(_ value: String) -> String {
        var out = ""
        var pendingSpace = false
        for c in value {
            if c == " " || c == "\t" || c == "\n" || c == "\r" {
                pendingSpace = !out.isEmpty
            } else {
                if pendingSpace { out.append(" ") }
                pendingSpace = false
                out.append(c)
            }
        }
        return out
    }

    /// The canonical query string: each name and value encoded (``encode(_:keepingSlash:)``),
    /// sorted by encoded name then value in byte order, `name=value` joined with `&`; a parameter
    /// without a value is `name=`.
    public static func canonicalQuery(_ items: [(String, String)]) -> String {
        items.map { (encode($0.0, keepingSlash: false), encode($0.1, keepingSlash: false)) }
            .sorted { a, b in
                a.0 != b.0
                    ? Array(a.0.utf8).lexicographicallyPrecedes(Array(b.0.utf8))
                    : Array(a.1.utf8).lexicographicallyPrecedes(Array(b.1.utf8))
            }
            .map { "\($0.0)=\($0.1)" }
            .joined(separator: "&")
    }

    /// `/` followed by `key` encoded for a URI path: every byte but `A-Z a-z 0-9 - . _ ~` and `/`
    /// as `%XX` (uppercase hex). `encodePath("test$file.text")` is `/test%24file.text`.
    public static func encodePath(_ key: String) -> String {
        key.hasPrefix("/") ? encode(key, keepingSlash: true) : "/" + encode(key, keepingSlash: true)
    }

    /// `text`'s UTF-8 bytes percent-encoded with uppercase hex, except the unreserved characters
    /// (and `/`, when `keepingSlash`).
    public static func encode(_ text: String, keepingSlash: Bool) -> String {
        let digits = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count)
        for b in text.utf8 {
            switch b {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.append(b)
            case UInt8(ascii: "/") where keepingSlash:
                out.append(b)
            default:
                out.append(UInt8(ascii: "%"))
                out.append(digits[Int(b >> 4)])
                out.append(digits[Int(b & 15)])
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 15)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
