import BacklotBasics
import BacklotHTTPClient

#if canImport(Glibc)
import Glibc
#endif

extension S3Client {
    /// Stores an object (PutObject), atomically: readers see the old object or the new one, never a mix.
    ///
    /// ```swift
    /// // Create-only: fails with .preconditionFailed if the key exists.
    /// try s3.putObject(bucket: "packs", key: "packs/\(sha).aar", body: .file(path: p, offset: 0, length: n),
    ///                  contentType: "application/octet-stream", cacheControl: "public, max-age=31536000, immutable",
    ///                  condition: .ifAbsent)
    /// ```
    /// - Parameters:
    ///   - body: the bytes (a file range is read twice: once for its SHA-256, once as it is sent).
    ///   - condition: ``S3WriteCondition/ifAbsent`` or ``S3WriteCondition/ifMatches(_:)`` for compare-and-swap.
    /// - Returns: the new object's ETag.
    /// - Throws: ``BacklotError/Code/preconditionFailed`` when the condition does not hold; the errors of ``perform``.
    ///   A conditional put is not repeated after a broken connection (the first attempt may have been stored).
    @discardableResult
    public func putObject(
        bucket: String, key: String, body: S3Body, contentType: String? = nil, cacheControl: String? = nil,
        condition: S3WriteCondition = .none
    ) throws -> String {
        var request = S3Request(operation: "PUT object", method: "PUT", bucket: bucket, key: key, body: body)
        if let contentType { request.headers.append(("Content-Type", contentType)) }
        if let cacheControl { request.headers.append(("Cache-Control", cacheControl)) }
        switch condition {
        case .none: break
        case .ifAbsent:
            request.headers.append(("If-None-Match", "*"))
            request.repeats = .onlyAfterRefusal
        case .ifMatches(let etag):
            // The ETag without its quotes: radosgw (16.2) compares a PUT's If-Match with the bare
            // value and refuses the quoted form with 412; S3 takes either.
            request.headers.append(("If-Match", Self.unquoted(etag)))
            request.repeats = .onlyAfterRefusal
        }
        let response = try perform(request, bodyLimit: 1 << 20)
        return response.headers["etag"] ?? ""
    }

    /// An ETag without surrounding double quotes (and without a weak `W/` prefix).
    static func unquoted(_ etag: String) -> String {
        var e = Substring(etag.trimmingWhitespace)
        if e.hasPrefix("W/") { e = e.dropFirst(2) }
        if e.count >= 2, e.hasPrefix("\""), e.hasSuffix("\"") { e = e.dropFirst().dropLast() }
        return String(e)
    }

    /// Reads an object (or a range of it) into memory.
    /// - Parameter limit: the most bytes accepted (by default 64 MiB); a larger object fails with ``BacklotError/Code/quotaExceeded``.
    /// - Returns: the bytes and what the answer said about the object.
    /// - Throws: ``BacklotError/Code/notFound`` (no such key or bucket), ``BacklotError/Code/preconditionFailed``
    ///   (`ifMatch` given and the object has changed), ``BacklotError/Code/invalidInput`` (a range outside the object).
    public func getObject(
        bucket: String, key: String, range: S3ByteRange? = nil, ifMatch: String? = nil,
        limit: UInt64 = 64 << 20
    ) throws -> (bytes: [UInt8], info: S3ObjectInfo) {
        var bytes: [UInt8] = []
        let info = try getObject(
            bucket: bucket, key: key, range: range, ifMatch: ifMatch, limit: limit, restart: { bytes.removeAll() }
        ) {
            bytes.append(contentsOf: $0)
        }
        return (bytes, info)
    }

    /// Reads an object (or a range of it) piece by piece: `receive` gets each piece as it arrives
    /// (at most 256 KiB each; nothing else is buffered).
    ///
    /// A transfer that breaks after pieces were handed over is not repeated (the caller holds them);
    /// it fails with ``BacklotError/Code/transport`` and the caller may ask for the rest with a range.
    public func getObject(
        bucket: String, key: String, range: S3ByteRange? = nil, ifMatch: String? = nil, limit: UInt64 = UInt64.max,
        receive: (UnsafeRawBufferPointer) throws -> Void
    ) throws -> S3ObjectInfo {
        try getObject(
            bucket: bucket, key: key, range: range, ifMatch: ifMatch, limit: limit, restart: nil, receive: receive)
    }

    /// Downloads an object (or a range of it) into the file at `path` (created or truncated, mode
    /// 0600, synced to disk at the end). A broken transfer starts the file over.
    public func getObject(
        bucket: String, key: String, range: S3ByteRange? = nil, ifMatch: String? = nil, limit: UInt64 = UInt64.max,
        toFile path: String
    ) throws -> S3ObjectInfo {
        let raw = try SystemCall.retrying("open", path: path) {
            open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        }
        let fd = FileDescriptor(rawValue: raw, path: path)
        defer { fd.close() }
        var offset: UInt64 = 0
        let info = try getObject(
            bucket: bucket, key: key, range: range, ifMatch: ifMatch, limit: limit,
            restart: {
                guard ftruncate(fd.rawValue, 0) == 0 else { throw SystemCall.error("ftruncate", path: path) }
                offset = 0
            }
        ) { piece in
            try fd.write(piece, at: offset)
            offset += UInt64(piece.count)
        }
        try fd.sync()
        return info
    }

    func getObject(
        bucket: String, key: String, range: S3ByteRange?, ifMatch: String?, limit: UInt64,
        restart: (() throws -> Void)?,
        receive: (UnsafeRawBufferPointer) throws -> Void
    ) throws -> S3ObjectInfo {
        var request = S3Request(
            operation: range == nil ? "GET object" : "GET object range \(range!)", method: "GET", bucket: bucket,
            key: key)
        if let range { request.headers.append(("Range", range.description)) }
        if let ifMatch { request.headers.append(("If-Match", ifMatch)) }
        let bound = range?.length.map { min($0, limit) } ?? limit
        let response = try perform(request, bodyLimit: bound, restart: restart, receive: receive)
        let info = try objectInfo(
            response.headers, status: response.status, request: request, bodyLength: response.received)
        if let range {
            // Verify before trusting: a 206 for another range would hand over foreign bytes.
            guard response.status == 206, let start = info.rangeStart, range.first.map({ $0 == start }) ?? true else {
                throw BacklotError(
                    .objectStore,
                    "\(request.operation) \(Self.describe(bucket, key)) at \(configuration.endpoint): the answer (\(response.status), \(response.headers["content-range"] ?? "no Content-Range")) is not the range asked for",
                    context: configuration.endpoint)
            }
        }
        if let length = range?.length, response.received != min(length, info.size - (info.rangeStart ?? 0)) {
            throw BacklotError(
                .objectStore,
                "\(request.operation) \(Self.describe(bucket, key)): \(response.received) bytes arrived for a range of \(length)",
                context: configuration.endpoint)
        }
        return info
    }

    /// The object's size, ETag and headers (HeadObject), or nil when there is no such object.
    /// - Throws: ``BacklotError/Code/forbidden`` (a HEAD answer has no body: wrong credentials look
    ///   like missing permission), the errors of ``perform``.
    public func headObject(bucket: String, key: String) throws -> S3ObjectInfo? {
        let request = S3Request(operation: "HEAD object", method: "HEAD", bucket: bucket, key: key)
        do {
            let response = try perform(request, bodyLimit: 0)
            return try objectInfo(response.headers, status: response.status, request: request, bodyLength: 0)
        } catch let e as BacklotError where e.code == .notFound {
            return nil
        }
    }

    /// Deletes an object (DeleteObject). Deleting a key that does not exist succeeds, as in S3.
    public func deleteObject(bucket: String, key: String) throws {
        _ = try perform(
            S3Request(operation: "DELETE object", method: "DELETE", bucket: bucket, key: key), bodyLimit: 1 << 20)
    }

    /// One page of the keys under `prefix` (ListObjectsV2), in key order.
    /// - Parameters:
    ///   - continuationToken: the previous page's ``S3ListPage/continuationToken``.
    ///   - delimiter: roll keys up to the first `delimiter` after the prefix into ``S3ListPage/commonPrefixes``.
    ///   - maximumKeys: at most this many keys per page (1 to 1000).
    public func listObjects(
        bucket: String, prefix: String = "", delimiter: String? = nil, continuationToken: String? = nil,
        maximumKeys: Int = 1000
    ) throws -> S3ListPage {
        var query = [("list-type", "2"), ("max-keys", String(min(max(maximumKeys, 1), 1000)))]
        if !prefix.isEmpty { query.append(("prefix", prefix)) }
        if let delimiter { query.append(("delimiter", delimiter)) }
        if let continuationToken { query.append(("continuation-token", continuationToken)) }
        let request = S3Request(
            operation: "LIST objects\(prefix.isEmpty ? "" : " under \(prefix)")", method: "GET", bucket: bucket,
            key: nil, query: query)
        let root = try xmlAnswer(request, root: "ListBucketResult")
        var entries: [S3ListPage.Entry] = []
        for item in root.children(named: "Contents") {
            guard let key = item.value("Key"),
                let size = CheckedInteger.parse(item.value("Size") ?? "", as: UInt64.self)
            else {
                throw BacklotError(
                    .objectStore,
                    "the listing of \(Self.describe(bucket, nil)) at \(configuration.endpoint) has an entry without a key or a size",
                    context: configuration.endpoint)
            }
            entries.append(
                .init(key: key, size: size, etag: item.value("ETag") ?? "", lastModified: item.value("LastModified")))
        }
        let prefixes = root.children(named: "CommonPrefixes").compactMap { $0.value("Prefix") }
        let truncated = root.value("IsTruncated") == "true"
        let next = truncated ? root.value("NextContinuationToken") : nil
        if truncated && (next ?? "").isEmpty {
            throw BacklotError(
                .objectStore,
                "the listing of \(Self.describe(bucket, nil)) at \(configuration.endpoint) is truncated but gives no continuation token",
                context: configuration.endpoint)
        }
        return S3ListPage(entries: entries, commonPrefixes: prefixes, continuationToken: next)
    }

    /// Every key under `prefix`, page after page, at most `limit` of them (with a `delimiter`, the
    /// keys directly under it: the prefixes rolled up count against `limit` too, unreturned).
    /// - Throws: ``BacklotError/Code/quotaExceeded`` past `limit` keys; ``BacklotError/Code/objectStore``
    ///   when the listing does not advance (``S3ListingPages``).
    public func listAllObjects(
        bucket: String, prefix: String = "", delimiter: String? = nil, limit: Int = 1_000_000
    ) throws -> [S3ListPage.Entry] {
        var out: [S3ListPage.Entry] = []
        var rolledUp = 0
        var token: String?
        var pages = S3ListingPages(
            operation: "LIST objects under \(Self.describe(bucket, prefix))", endpoint: configuration.endpoint)
        repeat {
            let page = try listObjects(bucket: bucket, prefix: prefix, delimiter: delimiter, continuationToken: token)
            try pages.page(adding: page.entries.count + page.commonPrefixes.count)
            out += page.entries
            rolledUp += page.commonPrefixes.count
            guard out.count + rolledUp <= limit else {
                throw BacklotError(
                    .quotaExceeded, "more than \(limit) objects under \(Self.describe(bucket, prefix))",
                    context: configuration.endpoint)
            }
            token = page.continuationToken
        } while token != nil
        return out
    }

    /// What the headers of a GET or HEAD answer say about the object.
    func objectInfo(
        _ headers: [String: String], status: Int, request: S3Request, bodyLength: UInt64
    ) throws -> S3ObjectInfo {
        var size: UInt64?
        var start: UInt64?
        if status == 206, let range = headers["content-range"] {
            // bytes FIRST-LAST/TOTAL
            let v = range.trimmingWhitespace
            if v.hasPrefix("bytes "), let slash = v.firstIndex(of: "/"), let dash = v.firstIndex(of: "-") {
                start = CheckedInteger.parse(v[v.index(v.startIndex, offsetBy: 6)..<dash], as: UInt64.self)
                size = CheckedInteger.parse(v[v.index(after: slash)...], as: UInt64.self)
            }
        } else {
            size = headers["content-length"].flatMap { CheckedInteger.parse($0, as: UInt64.self) }
        }
        guard let size else {
            throw BacklotError(
                .objectStore,
                "\(request.operation) \(Self.describe(request.bucket, request.key)) at \(configuration.endpoint): the answer gives no size (Content-Length or Content-Range)",
                context: configuration.endpoint)
        }
        // A range that starts past the object's end, or more bytes than the rest of it, is not an
        // answer to believe (and `size - start` must not wrap).
        if let start, start > size || bodyLength > size - start {
            throw BacklotError(
                .objectStore,
                "\(request.operation) \(Self.describe(request.bucket, request.key)) at \(configuration.endpoint): the answer's Content-Range (\(headers["content-range"] ?? "")) starts at \(start) of an object of \(size) bytes and brings \(bodyLength)",
                context: configuration.endpoint)
        }
        return S3ObjectInfo(
            size: size, etag: headers["etag"] ?? "", contentType: headers["content-type"],
            cacheControl: headers["cache-control"],
            lastModified: headers["last-modified"], rangeStart: start, bodyLength: bodyLength)
    }
}
