import BacklotBasics

extension S3Client {
    /// Uploads the file at `path` as one object: a single PUT when it fits in one part, otherwise a
    /// multipart upload streamed from the file part by part (nothing of it is held in memory), which
    /// can be resumed: pass the `uploadID` of an upload begun earlier (by this process or another)
    /// and the parts already there with the right size are kept, the others uploaded.
    ///
    /// ```swift
    /// let etag = try s3.uploadFile(bucket: "packs", key: "big.aar", path: "/data/big.aar", partSize: 16 << 20,
    ///                              contentType: "application/octet-stream") { id in saveUploadID(id) }
    /// ```
    /// - Parameters:
    ///   - partSize: bytes per part, 5 MiB to 5 GiB (the last part may be smaller); raised as needed
    ///     so that the file takes at most 10,000 parts.
    ///   - resuming: the upload ID of an upload of this key begun earlier.
    ///   - begun: called with the upload ID as soon as a new multipart upload exists (to record it for resuming).
    /// - Returns: the object's ETag.
    /// - Throws: ``BacklotError/Code/invalidInput`` for a part size out of bounds; the errors of the operations used.
    @discardableResult
    public func uploadFile(
        bucket: String, key: String, path: String, partSize: UInt64 = 16 << 20, contentType: String? = nil,
        cacheControl: String? = nil, resuming uploadID: String? = nil, begun: (String) -> Void = { _ in }
    ) throws -> String {
        guard (Self.minimumPartSize...Self.maximumPartSize).contains(partSize) else {
            throw BacklotError(
                .invalidInput, "a part size of \(partSize) bytes is outside 5 MiB…5 GiB",
                context: Self.describe(bucket, key))
        }
        let fd = try FileDescriptor.openForReading(path)
        let size = try fd.size()
        fd.close()
        if size <= partSize && uploadID == nil {
            return try putObject(
                bucket: bucket, key: key, body: .file(path: path, offset: 0, length: size), contentType: contentType,
                cacheControl: cacheControl)
        }
        var part = partSize
        while (size + part - 1) / part > UInt64(Self.maximumPartCount) { part *= 2 }
        let count = Int(max(1, (size + part - 1) / part))
        let id: String
        var kept: [Int: S3Part] = [:]
        if let uploadID {
            id = uploadID
            for p in try listParts(bucket: bucket, key: key, uploadID: uploadID) where p.number <= count {
                let expected = p.number == count ? size - UInt64(count - 1) * part : part
                if p.size == expected { kept[p.number] = p }
            }
        } else {
            id = try createMultipartUpload(
                bucket: bucket, key: key, contentType: contentType, cacheControl: cacheControl)
            begun(id)
        }
        var parts: [S3Part] = []
        for n in 1...count {
            if let p = kept[n] {
                parts.append(p)
                continue
            }
            let offset = UInt64(n - 1) * part
            parts.append(
                try uploadPart(
                    bucket: bucket, key: key, uploadID: id, partNumber: n,
                    body: .file(path: path, offset: offset, length: min(part, size - offset))))
        }
        return try completeMultipartUpload(bucket: bucket, key: key, uploadID: id, parts: parts)
    }
}
