import BacklotBasics

extension S3Client {
    /// The smallest part S3 accepts, but for the last (5 MiB).
    public static let minimumPartSize: UInt64 = 5 << 20
    /// The largest part S3 accepts (5 GiB).
    public static let maximumPartSize: UInt64 = 5 << 30
    /// The most parts one upload may have.
    public static let maximumPartCount = 10_000
    /// The largest object S3 stores (5 TiB): a size above it, from a HEAD or a listing, is not one
    /// to act on.
    public static let maximumObjectSize: UInt64 = 5 << 40

    /// Begins a multipart upload (CreateMultipartUpload); the object appears only once it is completed.
    ///
    /// ```swift
    /// let id = try s3.createMultipartUpload(bucket: "packs", key: "big.aar", contentType: "application/octet-stream")
    /// let p1 = try s3.uploadPart(bucket: "packs", key: "big.aar", uploadID: id, partNumber: 1, body: .file(path: f, offset: 0, length: 5 << 20))
    /// let p2 = try s3.uploadPart(bucket: "packs", key: "big.aar", uploadID: id, partNumber: 2, body: .file(path: f, offset: 5 << 20, length: rest))
    /// try s3.completeMultipartUpload(bucket: "packs", key: "big.aar", uploadID: id, parts: [p1, p2])
    /// ```
    /// - Returns: the upload ID, which another process may resume with (``listParts(bucket:key:uploadID:)``).
    ///   It is not repeated after a broken connection (that would begin a second upload).
    public func createMultipartUpload(
        bucket: String, key: String, contentType: String? = nil, cacheControl: String? = nil
    ) throws -> String {
        var request = S3Request(
            operation: "CREATE multipart upload", method: "POST", bucket: bucket, key: key,
            query: [("uploads", "")], body: .bytes([]), repeats: .onlyAfterRefusal)
        if let contentType { request.headers.append(("Content-Type", contentType)) }
        if let cacheControl { request.headers.append(("Cache-Control", cacheControl)) }
        let root = try xmlAnswer(request, root: "InitiateMultipartUploadResult")
        guard let id = root.value("UploadId"), !id.isEmpty else {
            throw BacklotError(
                .objectStore,
                "CREATE multipart upload \(Self.describe(bucket, key)) at \(configuration.endpoint): the answer has no UploadId",
                context: configuration.endpoint)
        }
        return id
    }

    /// Uploads part `partNumber` (UploadPart): from a buffer, or streamed from a file range. Uploading
    /// a part number again replaces it, so this is repeated after any failure.
    /// - Throws: ``BacklotError/Code/invalidInput`` for a part number outside 1…10,000 or a part over 5 GiB;
    ///   ``BacklotError/Code/notFound`` when the upload was completed or aborted.
    public func uploadPart(
        bucket: String, key: String, uploadID: String, partNumber: Int, body: S3Body
    ) throws -> S3Part {
        guard (1...Self.maximumPartCount).contains(partNumber) else {
            throw BacklotError(
                .invalidInput, "part number \(partNumber) is outside 1…\(Self.maximumPartCount)",
                context: Self.describe(bucket, key))
        }
        guard body.count <= Self.maximumPartSize else {
            throw BacklotError(
                .invalidInput, "part \(partNumber) is \(body.count) bytes; S3 takes at most 5 GiB per part",
                context: Self.describe(bucket, key))
        }
        let request = S3Request(
            operation: "UPLOAD part \(partNumber)", method: "PUT", bucket: bucket, key: key,
            query: [("partNumber", String(partNumber)), ("uploadId", uploadID)], body: body)
        let response = try perform(request, bodyLimit: 1 << 20)
        guard let etag = response.headers["etag"], !etag.isEmpty else {
            throw BacklotError(
                .objectStore,
                "UPLOAD part \(partNumber) \(Self.describe(bucket, key)) at \(configuration.endpoint): the answer has no ETag",
                context: configuration.endpoint)
        }
        return S3Part(number: partNumber, etag: etag, size: body.count)
    }

    /// Completes a multipart upload (CompleteMultipartUpload): the parts, in part-number order,
    /// become the object, atomically. A failure reported inside a 200 answer is a failure too.
    /// - Returns: the object's ETag.
    /// - Throws: ``BacklotError/Code/objectStore`` (InvalidPart, EntityTooSmall: a part but the last
    ///   under 5 MiB), ``BacklotError/Code/notFound`` (NoSuchUpload: completed or aborted already).
    @discardableResult
    public func completeMultipartUpload(bucket: String, key: String, uploadID: String, parts: [S3Part]) throws -> String
    {
        guard !parts.isEmpty else {
            throw BacklotError(
                .invalidInput, "a multipart upload cannot be completed without parts",
                context: Self.describe(bucket, key))
        }
        var xml = "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
        for part in parts.sorted(by: { $0.number < $1.number }) {
            xml += "<Part><PartNumber>\(part.number)</PartNumber><ETag>\(Self.xmlEscaped(part.etag))</ETag></Part>"
        }
        xml += "</CompleteMultipartUpload>"
        let request = S3Request(
            operation: "COMPLETE multipart upload", method: "POST", bucket: bucket, key: key,
            query: [("uploadId", uploadID)], headers: [("Content-Type", "application/xml")],
            body: .bytes(Array(xml.utf8)))
        let root = try xmlAnswer(request, root: "CompleteMultipartUploadResult")
        if let etag = root.value("ETag"), !etag.isEmpty { return etag }
        // radosgw 16.2 answers with an empty <ETag/>: ask for it.
        return try headObject(bucket: bucket, key: key)?.etag ?? ""
    }

    /// Abandons a multipart upload (AbortMultipartUpload) and frees its parts.
    public func abortMultipartUpload(bucket: String, key: String, uploadID: String) throws {
        _ = try perform(
            S3Request(
                operation: "ABORT multipart upload", method: "DELETE", bucket: bucket, key: key,
                query: [("uploadId", uploadID)]),
            bodyLimit: 1 << 20)
    }

    /// The parts uploaded so far (ListParts, every page), in part-number order: what a process that
    /// did not begin the upload needs to resume it (upload the missing parts, then complete with all).
    public func listParts(bucket: String, key: String, uploadID: String) throws -> [S3Part] {
        var parts: [S3Part] = []
        var marker: String?
        var pages = S3ListingPages(
            operation: "LIST parts \(Self.describe(bucket, key))", endpoint: configuration.endpoint)
        repeat {
            var query = [("uploadId", uploadID), ("max-parts", "1000")]
            if let marker { query.append(("part-number-marker", marker)) }
            let root = try xmlAnswer(
                S3Request(operation: "LIST parts", method: "GET", bucket: bucket, key: key, query: query),
                root: "ListPartsResult")
            let listed = root.children(named: "Part")
            try pages.page(adding: listed.count)
            for p in listed {
                guard let n = CheckedInteger.parse(p.value("PartNumber") ?? "", as: Int.self),
                    (1...Self.maximumPartCount).contains(n),
                    let etag = p.value("ETag"), let size = CheckedInteger.parse(p.value("Size") ?? "", as: UInt64.self)
                else {
                    throw BacklotError(
                        .objectStore,
                        "LIST parts \(Self.describe(bucket, key)) at \(configuration.endpoint): a part without a valid number, ETag or size",
                        context: configuration.endpoint)
                }
                parts.append(S3Part(number: n, etag: etag, size: size))
            }
            let next = root.value("IsTruncated") == "true" ? root.value("NextPartNumberMarker") : nil
            guard next != marker || next == nil, parts.count <= Self.maximumPartCount else {
                throw BacklotError(
                    .objectStore,
                    "LIST parts \(Self.describe(bucket, key)) at \(configuration.endpoint) does not advance",
                    context: configuration.endpoint)
            }
            marker = next
        } while marker != nil
        return parts.sorted { $0.number < $1.number }
    }

    /// The multipart uploads under way under `prefix` (ListMultipartUploads, every page, at most `limit`).
    public func listMultipartUploads(
        bucket: String, prefix: String = "", limit: Int = 100_000
    ) throws -> [S3MultipartUpload] {
        var out: [S3MultipartUpload] = []
        var keyMarker: String?
        var idMarker: String?
        var pages = S3ListingPages(
            operation: "LIST multipart uploads under \(Self.describe(bucket, prefix))", endpoint: configuration.endpoint
        )
        repeat {
            var query = [("uploads", "")]
            if !prefix.isEmpty { query.append(("prefix", prefix)) }
            if let keyMarker { query.append(("key-marker", keyMarker)) }
            if let idMarker { query.append(("upload-id-marker", idMarker)) }
            let root = try xmlAnswer(
                S3Request(operation: "LIST multipart uploads", method: "GET", bucket: bucket, key: nil, query: query),
                root: "ListMultipartUploadsResult")
            let before = out.count
            for u in root.children(named: "Upload") {
                guard let key = u.value("Key"), let id = u.value("UploadId") else { continue }
                out.append(S3MultipartUpload(key: key, uploadID: id, initiated: u.value("Initiated")))
            }
            try pages.page(adding: out.count - before)  // what was taken, not what was listed
            guard out.count <= limit else {
                throw BacklotError(
                    .quotaExceeded, "more than \(limit) multipart uploads under \(Self.describe(bucket, prefix))",
                    context: configuration.endpoint)
            }
            if root.value("IsTruncated") == "true", let k = root.value("NextKeyMarker"),
                k != keyMarker || root.value("NextUploadIdMarker") != idMarker
            {
                keyMarker = k
                idMarker = root.value("NextUploadIdMarker")
            } else {
                keyMarker = nil
            }
        } while keyMarker != nil
        return out
    }
}
