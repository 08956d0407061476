import BacklotBasics
import BacklotHTTPClient
import Foundation

extension BacklotError.Code {
    /// A conditional write's condition did not hold (HTTP 412): the object exists already
    /// (`If-None-Match: *`) or has another ETag than the one given (`If-Match`). Nothing was written.
    public static let preconditionFailed = BacklotError.Code("preconditionFailed", isInvalidInput: false)
    /// The server refused the request's signing time as too far from its own clock
    /// (`RequestTimeTooSkewed`); the message says by how much.
    public static let clockSkew = BacklotError.Code("clockSkew", isInvalidInput: false)
    /// The object store refused or failed a request for another reason (its S3 error code is in the message).
    public static let objectStore = BacklotError.Code("objectStore", isInvalidInput: false)
}

extension S3Client {
    /// The error a non-2xx answer stands for, from its XML body (`<Error><Code>…`) or, for a body-less
    /// answer (HEAD), from its status.
    func error(for response: HTTPClient.StreamedResponse, request: S3Request, signedAt: Date?) -> BacklotError {
        let xml = try? S3XML.parse(response.errorBody)
        let fallback: String
        switch response.status {
        case 301, 307: fallback = "PermanentRedirect"
        case 304: fallback = "NotModified"
        case 400: fallback = "BadRequest"
        case 403: fallback = "AccessDenied"
        case 404: fallback = request.key == nil ? "NoSuchBucket" : "NotFound"
        case 409: fallback = "Conflict"
        case 412: fallback = "PreconditionFailed"
        case 416: fallback = "InvalidRange"
        case 503: fallback = "ServiceUnavailable"
        default: fallback = response.status >= 500 ? "InternalError" : "HTTP\(response.status)"
        }
        var code = xml?.name == "Error" ? (xml?.value("Code") ?? fallback) : fallback
        // radosgw 16.2 answers NoSuchKey for a multipart upload that is gone.
        if code == "NoSuchKey" && request.query.contains(where: { $0.0 == "uploadId" }) { code = "NoSuchUpload" }
        return error(
            code: code, message: xml?.value("Message") ?? "", status: response.status, headers: response.headers,
            request: request, signedAt: signedAt)
    }

    /// The error for S3 error `code`.
    func error(
        code: String, message: String, status: Int, headers: [String: String], request: S3Request, signedAt: Date?
    ) -> BacklotError {
        let what = "\(request.operation) \(Self.describe(request.bucket, request.key)) at \(configuration.endpoint)"
        let said = message.isEmpty ? code : "\(code): \(message)"
        let context = configuration.endpoint
        switch code {
        case "InvalidAccessKeyId", "SignatureDoesNotMatch", "InvalidToken", "ExpiredToken", "TokenRefreshRequired":
            return BacklotError(
                .forbidden, "\(what): the credentials are wrong for this endpoint (\(said))", context: context,
                hint:
                    "check AWS_ACCESS_KEY_ID (\(credentials.accessKeyID)), AWS_SECRET_ACCESS_KEY\(credentials.sessionToken == nil ? "" : " and AWS_SESSION_TOKEN") against the keys of \(configuration.endpoint)\(request.bucket.map { " for bucket \($0)" } ?? "")"
            )
        case "AccessDenied":
            let headOnly = request.method == "HEAD"
            return BacklotError(
                .forbidden,
                "\(what): access denied (\(said))\(headOnly ? "; a HEAD answer has no body, so this may also be wrong credentials" : "")",
                context: context,
                hint:
                    "check that the key \(credentials.accessKeyID) may use \(Self.describe(request.bucket, nil)) at \(configuration.endpoint), and AWS_SECRET_ACCESS_KEY"
            )
        case "RequestTimeTooSkewed":
            return BacklotError(
                .clockSkew,
                "\(what): the server refused the request's time: \(skewDescription(signedAt: signedAt, serverDate: headers["date"])) (\(said))",
                context: context,
                hint:
                    "set this machine's clock right (NTP: timedatectl set-ntp true, or chrony); S3 refuses requests signed more than 15 minutes from its own time"
            )
        case "NoSuchBucket":
            return BacklotError(
                .notFound, "\(what): the bucket \(request.bucket ?? "?") does not exist at \(configuration.endpoint)",
                context: context,
                hint:
                    "create it (for example with s3cmd mb s3://\(request.bucket ?? "BUCKET")), or check --storage s3://BUCKET and --s3-endpoint"
            )
        case "NoSuchKey", "NotFound":
            return BacklotError(.notFound, "\(what): no such object", context: context)
        case "NoSuchUpload":
            return BacklotError(
                .notFound, "\(what): no such multipart upload (it was completed or aborted, or never begun)",
                context: context)
        case "PreconditionFailed":
            return BacklotError(
                .preconditionFailed,
                "\(what): the condition did not hold (the object exists already, or has another ETag); nothing was written",
                context: context)
        case "InvalidRange":
            return BacklotError(.invalidInput, "\(what): the range is outside the object (\(said))", context: context)
        case "XAmzContentSHA256Mismatch", "BadDigest", "InvalidDigest":
            return BacklotError(
                .corruptArchive, "\(what): the server received other bytes than were signed (\(said))",
                context: context,
                hint: "the body changed while it was sent, or the network altered it; it is not stored")
        case "SlowDown", "ServiceUnavailable":
            return BacklotError(
                .objectStore, "\(what): the object store is overloaded and asked to slow down (\(said))",
                context: context, hint: "try again later")
        case "PermanentRedirect", "AuthorizationHeaderMalformed", "IllegalLocationConstraintException":
            return BacklotError(
                .usage, "\(what): wrong region or endpoint for this bucket (\(said))", context: context,
                hint: "check --s3-region (\(configuration.region)) and --s3-endpoint")
        case "BucketAlreadyExists":
            return BacklotError(
                .conflict, "\(what): the bucket name is taken by another account (\(said))", context: context)
        default:
            return BacklotError(.objectStore, "\(what): the object store answered \(status) \(said)", context: context)
        }
    }

    /// "the clock here is about 20 minutes ahead of the server's", from the time the request was
    /// signed with and the answer's `Date`.
    func skewDescription(signedAt: Date?, serverDate: String?) -> String {
        guard let signedAt, let serverDate, let server = Self.parseHTTPDate(serverDate) else {
            return "this machine's clock is more than 15 minutes off the server's"
        }
        let offset = signedAt.timeIntervalSince1970 - server
        let magnitude = abs(offset)
        let amount: String
        if magnitude >= 5400 {
            amount = "\(Int((magnitude / 3600).rounded())) hours"
        } else if magnitude >= 90 {
            amount = "\(Int((magnitude / 60).rounded())) minutes"
        } else {
            amount = "\(Int(magnitude.rounded())) seconds"
        }
        return
            "the clock here is about \(amount) \(offset > 0 ? "ahead of" : "behind") the server's (signed at \(SigV4Signer.timestamps(signedAt).stamp), server time \(serverDate))"
    }

    /// Seconds since 1970 of an IMF-fixdate (`Tue, 01 Dec 2026 14:13:41 GMT`), or nil.
    static func parseHTTPDate(_ text: String) -> Double? {
        /// A field of exactly `width` digits (the date's fields are zero-padded).
        func field(_ s: Substring, width: Int) -> Int32? {
            guard s.utf8.count == width, s.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") })
            else { return nil }
            return s.utf8.reduce(Int32(0)) { $0 * 10 + Int32($1 - UInt8(ascii: "0")) }
        }
        let parts = text.split(separator: " ")
        guard parts.count == 6, parts[5] == "GMT" else { return nil }
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        let clock = parts[4].split(separator: ":")
        guard let day = field(parts[1], width: 2), let month = months.firstIndex(of: String(parts[2])),
            let year = field(parts[3], width: 4), year >= 1970, (1...31).contains(day), clock.count == 3,
            let h = field(clock[0], width: 2), let m = field(clock[1], width: 2), let s = field(clock[2], width: 2),
            h < 24, m < 60, s < 61
        else { return nil }
        var t = tm()
        t.tm_year = year - 1900
        t.tm_mon = Int32(month)
        t.tm_mday = day
        t.tm_hour = h
        t.tm_min = m
        t.tm_sec = s
        return Double(timegm(&t))
    }
}
