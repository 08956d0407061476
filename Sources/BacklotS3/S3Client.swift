import BacklotBasics
import BacklotCrypto
import BacklotHTTPClient
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// An S3 client over libcurl: every request signed with AWS Signature Version 4
/// (``SigV4Signer``), `x-amz-content-sha256` always sent, failures retried with backoff where
/// that is safe (``S3RetryPolicy``), and every refusal turned into a ``BacklotError`` that names
/// the endpoint, the bucket, the key and the operation.
///
/// It is synchronous and holds no connection between requests; a value can be shared between
/// threads. Bodies are streamed: an upload is read from memory or a file as it is sent, a
/// download is handed over piece by piece or written to a file, so nothing but one part (for a
/// multipart upload) and libcurl's buffer is ever in memory.
///
/// ```swift
/// let s3 = try S3Client(configuration: S3Configuration(endpoint: "http://127.0.0.1:7480"),
///                       credentials: S3Credentials.fromEnvironment())
/// try s3.createBucket("packs")
/// let etag = try s3.putObject(bucket: "packs", key: "a.aar", body: .bytes(bytes), contentType: "application/octet-stream")
/// let head = try s3.headObject(bucket: "packs", key: "a.aar")   // size, ETag
/// ```
public struct S3Client: Sendable {
    public let configuration: S3Configuration
    public let credentials: S3Credentials
    let http: HTTPClient
    /// Test only: sent as `x-amz-content-sha256` (and signed) instead of the body's real hash,
    /// to prove that the server checks it.
    package var payloadHashOverride: String?

    /// The largest response body read into memory for a listing or another XML answer (8 MiB).
    public static let maximumXMLAnswer: UInt64 = 8 << 20

    public init(configuration: S3Configuration, credentials: S3Credentials) {
        self.configuration = configuration
        self.credentials = credentials
        http = HTTPClient(caFile: configuration.caFile, stallTimeout: configuration.stallTimeout)
    }

    /// Whether `bucket` can be the first label of a host name (virtual-hosted addressing).
    static func isDNSCompatible(_ bucket: String) -> Bool {
        let b = Array(bucket.utf8)
        guard (3...63).contains(b.count), b.first != UInt8(ascii: "-"), b.last != UInt8(ascii: "-") else {
            return false
        }
        return b.allSatisfy {
            ($0 >= UInt8(ascii: "a") && $0 <= UInt8(ascii: "z")) || ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9"))
                || $0 == UInt8(ascii: "-")
        }
    }
}

/// What may be repeated after a failure.
enum S3Repeat {
    /// Repeat after a broken connection and after an answer saying nothing was done.
    case always
    /// Repeat only after an answer saying nothing was done (the request may have taken effect when the connection broke).
    case onlyAfterRefusal
}

/// One request, before signing.
struct S3Request {
    var operation: String
    var method: String
    var bucket: String?
    var key: String?
    var query: [(String, String)] = []
    var headers: [(String, String)] = []
    var body: S3Body?
    var repeats: S3Repeat = .always
}

extension S3Client {
    /// `s3://bucket/key` (or `s3://bucket`), for messages.
    static func describe(_ bucket: String?, _ key: String?) -> String {
        guard let bucket else { return "the endpoint" }
        return key.map { "s3://\(bucket)/\($0)" } ?? "s3://\(bucket)"
    }

    /// The URL, the path as signed and the `Host` of a request.
    func address(bucket: String?, key: String?) -> (url: String, path: String, host: String) {
        let keyPath = key.map { SigV4Signer.encodePath($0) }
        guard let bucket else {
            return ("\(configuration.scheme)://\(configuration.hostHeader)/", "/", configuration.hostHeader)
        }
        if configuration.usesPathStyle(for: bucket) {
            let path = "/" + SigV4Signer.encode(bucket, keepingSlash: false) + (keyPath ?? "")
            return ("\(configuration.scheme)://\(configuration.hostHeader)\(path)", path, configuration.hostHeader)
        }
        let host = "\(bucket).\(configuration.hostHeader)"
        let path = keyPath ?? "/"
        return ("\(configuration.scheme)://\(host)\(path)", path, host)
    }

    /// The SHA-256 of a body, as lowercase hex (a file range is read once for it, in 1 MiB pieces).
    func payloadHash(_ body: S3Body?) throws -> String {
        switch body {
        case nil: return SigV4Signer.emptyPayloadHash
        case .bytes(let b): return SHA256.hash(b).hex
        case .file(let path, let offset, let length):
            let fd = try FileDescriptor.openForReading(path)
            defer { fd.close() }
            var hasher = SHA256()
            var buffer = [UInt8](repeating: 0, count: 1 << 20)
            var done: UInt64 = 0
            while done < length {
                let want = Int(min(UInt64(buffer.count), length - done))
                let n = try buffer.withUnsafeMutableBytes {
                    try fd.read(into: UnsafeMutableRawBufferPointer(rebasing: $0[0..<want]), at: offset + done)
                }
                guard n > 0 else {
                    throw BacklotError(
                        .io, "the file ends before the \(length) bytes to upload from offset \(offset)", context: path)
                }
                buffer.withUnsafeBytes { hasher.update(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
                done += UInt64(n)
            }
            return hasher.finalize().hex
        }
    }

    /// Sends `request`, trying again as the retry policy and ``S3Repeat`` allow, and returns a 2xx
    /// answer; a 2xx body goes to `receive`.
    /// - Parameter restart: called before a repeat when part of a body had already been received
    ///   (a file being written starts over); without it such a request is not repeated.
    /// - Throws: the ``BacklotError`` the server's refusal maps to (``error(for:request:signedAt:)``),
    ///   ``BacklotError/Code/transport`` naming the endpoint when it could not be reached.
    func perform(
        _ request: S3Request, bodyLimit: UInt64, restart: (() throws -> Void)? = nil,
        receive: (UnsafeRawBufferPointer) throws -> Void = { _ in }
    ) throws -> HTTPClient.StreamedResponse {
        let (url, path, host) = address(bucket: request.bucket, key: request.key)
        let hash = try payloadHashOverride ?? payloadHash(request.body)
        let signer = SigV4Signer(credentials: credentials, region: configuration.region)
        let policy = configuration.retry
        var attempt = 0
        while true {
            attempt += 1
            let signedAt = configuration.clock()
            var headers = [("Host", host)] + request.headers
            let signed = signer.sign(
                .init(method: request.method, path: path, query: request.query, headers: headers, payloadHash: hash),
                at: signedAt)
            headers = signed.headers
            let target = signed.query.isEmpty ? url : url + "?" + signed.query
            var delivered: UInt64 = 0
            let response: HTTPClient.StreamedResponse
            do {
                response = try http.stream(
                    request.method, target, headers: headers, body: request.body.map(Self.httpBody),
                    bodyLimit: bodyLimit
                ) { piece in
                    delivered += UInt64(piece.count)
                    try receive(piece)
                }
            } catch let e as BacklotError where e.code == .transport {
                let repeatable = request.repeats == .always && (delivered == 0 || restart != nil)
                guard repeatable, attempt < policy.maximumAttempts else {
                    throw BacklotError(
                        .transport,
                        "\(request.operation) \(Self.describe(request.bucket, request.key)) at \(configuration.endpoint) failed\(attempt > 1 ? " after \(attempt) attempts" : ""): \(e.message)",
                        context: configuration.endpoint,
                        hint:
                            "check that the object store is running and that --s3-endpoint is right (\(configuration.endpoint))"
                    )
                }
                if delivered > 0 { try restart?() }
                sleep(policy.delay(after: attempt))
                continue
            }
            if (200..<300).contains(response.status) { return response }
            let failure = error(for: response, request: request, signedAt: signedAt)
            if attempt < policy.maximumAttempts && Self.isRetryable(response) && (delivered == 0 || restart != nil) {
                if delivered > 0 { try restart?() }
                sleep(policy.delay(after: attempt))
                continue
            }
            throw failure
        }
    }

    static func httpBody(_ body: S3Body) -> HTTPClient.Body {
        switch body {
        case .bytes(let b): .bytes(b)
        case .file(let path, let offset, let length): .file(path: path, offset: offset, length: length)
        }
    }

    /// An answer that says the server did nothing and may do it later: 500, 502, 503, 504, or a
    /// SlowDown / RequestTimeout / InternalError refusal.
    static func isRetryable(_ response: HTTPClient.StreamedResponse) -> Bool {
        if [500, 502, 503, 504].contains(response.status) { return true }
        let code = (try? S3XML.parse(response.errorBody))?.value("Code")
        return ["SlowDown", "RequestTimeout", "InternalError", "ServiceUnavailable", "Throttling"].contains(code ?? "")
    }

    func sleep(_ d: Duration) {
        let (seconds, attoseconds) = d.components
        var ts = timespec(tv_sec: Int(seconds), tv_nsec: Int(attoseconds / 1_000_000_000))
        var left = timespec()
        while nanosleep(&ts, &left) != 0 && errno == EINTR { ts = left }
    }

    /// Parses an XML answer of at most ``maximumXMLAnswer`` bytes whose root is `root`.
    func xmlAnswer(_ request: S3Request, root: String, query: [(String, String)]? = nil) throws -> S3XMLElement {
        var bytes: [UInt8] = []
        var r = request
        if let query { r.query = query }
        _ = try perform(r, bodyLimit: Self.maximumXMLAnswer, restart: { bytes.removeAll() }) {
            bytes.append(contentsOf: $0)
        }
        let element: S3XMLElement
        do {
            element = try S3XML.parse(bytes)
        } catch let e as BacklotError {
            throw BacklotError(
                .objectStore,
                "\(request.operation) \(Self.describe(request.bucket, request.key)) at \(configuration.endpoint): \(e.message)",
                context: e.context)
        }
        if element.name == "Error" {
            // CompleteMultipartUpload may answer 200 and report its failure in the body.
            throw error(
                code: element.value("Code") ?? "InternalError", message: element.value("Message") ?? "", status: 200,
                headers: [:], request: request, signedAt: nil)
        }
        guard element.name == root else {
            throw BacklotError(
                .objectStore,
                "\(request.operation) \(Self.describe(request.bucket, request.key)) at \(configuration.endpoint) answered <\(element.name)> where <\(root)> was expected",
                context: configuration.endpoint, hint: "is --s3-endpoint an S3 server?")
        }
        return element
    }
}
