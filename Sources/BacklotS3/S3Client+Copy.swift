import BacklotBasics

extension S3Client {
    /// The largest object one CopyObject request copies (5 GiB); larger ones are copied part by part.
    public static let maximumSingleCopySize: UInt64 = 5 << 30

    /// Copies an object inside the object store (CopyObject, or UploadPartCopy part by part for an
    /// object over 5 GiB): no byte passes through this process. The copy gets `contentType` and
    /// `cacheControl` (the source's own metadata is replaced), and appears atomically.
    ///
    /// ```swift
    /// try s3.copyObject(bucket: "backlot", key: "blobs/\(sha).pack", toBucket: "backlot", key: "public/v1/packs/\(sha).pack",
    ///                   contentType: "application/octet-stream", cacheControl: "public, max-age=31536000, immutable")
    /// ```
    /// - Parameters:
    ///   - size: the source's size when known (else it is asked for with a HEAD).
    ///   - singleCopyLimit: the largest object copied with one request (at most 5 GiB).
    ///   - partSize: bytes per part of a larger copy (5 MiB…5 GiB; raised so 10,000 parts hold the object).
    /// - Returns: the copy's ETag.
    /// - Throws: ``BacklotError/Code/notFound`` when the source does not exist; the errors of ``perform``,
    ///   including a failure reported inside a 200 answer.
    @discardableResult
    public func copyObject(
        bucket: String, key: String, toBucket: String, key destination: String, size: UInt64? = nil,
        contentType: String? = nil, cacheControl: String? = nil,
        singleCopyLimit: UInt64 = S3Client.maximumSingleCopySize, partSize: UInt64 = 1 << 30
    ) throws -> String {
        guard singleCopyLimit <= Self.maximumSingleCopySize,
            (Self.minimumPartSize...Self.maximumPartSize).contains(partSize)
        else {
            throw BacklotError(
                .invalidInput,
                "a copy limit of \(singleCopyLimit) or a part size of \(partSize) bytes is outside what S3 takes",
                context: Self.describe(toBucket, destination))
        }
        let source = "/" + bucket + "/" + SigV4Signer.encodePath(key).drop(while: { $0 == "/" })
        let length: UInt64
        if let size {
            length = size
        } else {
            guard let info = try headObject(bucket: bucket, key: key) else {
                throw BacklotError(
                    .notFound,
                    "COPY object: the source \(Self.describe(bucket, key)) does not exist at \(configuration.endpoint)",
                    context: configuration.endpoint)
            }
            length = info.size
        }
        guard length <= Self.maximumObjectSize else {
            throw BacklotError(
                .objectStore,
                "COPY object: the source \(Self.describe(bucket, key)) at \(configuration.endpoint) is said to be \(length) bytes, more than S3's largest object (5 TiB)",
                context: configuration.endpoint)
        }
        guard length > singleCopyLimit else {
            var request = S3Request(
                operation: "COPY object from \(Self.describe(bucket, key))", method: "PUT", bucket: toBucket,
                key: destination,
                headers: [("x-amz-copy-source", source), ("x-amz-metadata-directive", "REPLACE")], body: .bytes([]))
            if let contentType { request.headers.append(("Content-Type", contentType)) }
            if let cacheControl { request.headers.append(("Cache-Control", cacheControl)) }
            let root = try xmlAnswer(request, root: "CopyObjectResult")
            return root.value("ETag") ?? ""
        }
        let id = try createMultipartUpload(
            bucket: toBucket, key: destination, contentType: contentType, cacheControl: cacheControl)
        do {
            var parts: [S3Part] = []
            var part = partSize
            // Rounded up without `length + part - 1`, which a size near 2^64 from a HEAD would wrap.
            while length / part + (length % part == 0 ? 0 : 1) > UInt64(Self.maximumPartCount) { part *= 2 }
            var offset: UInt64 = 0
            while offset < length {
                let count = min(part, length - offset)
                let number = parts.count + 1
                let request = S3Request(
                    operation: "COPY part \(number) from \(Self.describe(bucket, key))", method: "PUT",
                    bucket: toBucket, key: destination,
                    query: [("partNumber", String(number)), ("uploadId", id)],
                    headers: [
                        ("x-amz-copy-source", source),
                        ("x-amz-copy-source-range", "bytes=\(offset)-\(offset + count - 1)"),
                    ],
                    body: .bytes([]))
                let root = try xmlAnswer(request, root: "CopyPartResult")
                guard let etag = root.value("ETag"), !etag.isEmpty else {
                    throw BacklotError(
                        .objectStore, "\(request.operation) at \(configuration.endpoint): the answer has no ETag",
                        context: configuration.endpoint)
                }
                parts.append(S3Part(number: number, etag: etag, size: count))
                offset += count
            }
            return try completeMultipartUpload(bucket: toBucket, key: destination, uploadID: id, parts: parts)
        } catch {
            try? abortMultipartUpload(bucket: toBucket, key: destination, uploadID: id)
            throw error
        }
    }
}
