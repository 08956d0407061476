import BacklotBasics
import BacklotS3

/// An upload into a bucket (``S3ArchiveStore``): bytes gather in memory until they fill a part,
/// which goes to the multipart upload at once, so the instance holds one part at most and nothing
/// on its disk. When a request ends short of a part, the bytes it left are stored as a small
/// "tail" object named by the offset it starts at, and the next request (on any instance)
/// starts from them. The multipart upload is completed when the declared size is reached.
///
/// What is durable is reported through `record` after each part and at the end of each request;
/// on opening, the object store is what counts (a crash between a part and its record loses
/// nothing): the parts listed, then the tail that starts where they end.
final class S3UploadSink: UploadSink {
    let store: S3ArchiveStore
    let upload: UploadRecord
    let record: (UInt64, String?) throws -> Void
    /// Bytes per part (all but the last have exactly this size).
    let part: UInt64
    private var multipartID: String?
    private var parts: [S3Part] = []
    /// Bytes in the parts.
    private var stored: UInt64 = 0
    /// Bytes after the parts, not yet in a part.
    private var buffer: [UInt8] = []
    /// The offset of the tail object that holds the start of `buffer`, if one does.
    private var tailStart: UInt64?
    private var complete = false
    private var finished = false
    /// Whether this request appended anything (a request that appended nothing writes nothing).
    private var appended = false

    var received: UInt64 { stored + UInt64(buffer.count) }

    var client: S3Client { store.client }
    var bucket: String { store.bucket }
    var key: String { store.uploadKey(upload.versionID) }

    /// What this request holds of ``S3ArchiveStore/uploadMemory`` (given back when the sink goes,
    /// at the end of the request): a part's worth, or the whole budget if a part is larger; 0
    /// until it is taken.
    private var held: UInt64 = 0

    init(store: S3ArchiveStore, upload: UploadRecord, record: @escaping (UInt64, String?) throws -> Void) throws {
        self.store = store
        self.upload = upload
        self.record = record
        part = store.partSize(for: upload.declared)
        // A part larger than the whole budget (an archive of over 5 TB) takes all of it.
        let need = min(part, store.uploadMemory.limit)
        guard store.uploadMemory.take(need) else {
            throw BacklotError(
                .unavailable,
                "this server holds as many uploads into the bucket in memory as it may (\(store.uploadMemory.limit >> 20) MiB, a part of \(part >> 20) MiB each)",
                context: upload.label, hint: "try again in a few seconds (backlot upload waits and resumes by itself)")
        }
        held = need
        if let id = upload.multipartID {
            do {
                for p in try client.listParts(bucket: bucket, key: key, uploadID: id) {
                    guard p.number == parts.count + 1, p.size == part, stored + part <= upload.declared else { break }
                    parts.append(p)
                    stored += part
                }
                multipartID = id
            } catch let e as BacklotError where e.code == .notFound {
                // Completed (a crash before it was recorded) or aborted: the object says which.
                if let info = try client.headObject(bucket: bucket, key: key), info.size == upload.declared {
                    complete = true
                    stored = upload.declared
                }
            }
        } else if upload.recorded == upload.declared, let info = try client.headObject(bucket: bucket, key: key),
            info.size == upload.declared
        {
            complete = true
            stored = upload.declared
        }
        let tails = store.tailPrefix(upload.versionID)
        for entry in try client.listAllObjects(bucket: bucket, prefix: tails, limit: 10_000) {
            let start = CheckedInteger.parse(entry.key.dropFirst(tails.count), as: UInt64.self)
            if !complete, tailStart == nil, start == stored, entry.size < part, entry.size <= upload.declared - stored {
                buffer = try client.getObject(bucket: bucket, key: entry.key, limit: part).bytes
                tailStart = start
            } else {
                try client.deleteObject(bucket: bucket, key: entry.key)
            }
        }
        if received != upload.recorded || multipartID != upload.multipartID {
            try record(received, complete ? nil : multipartID)
        }
    }

    deinit { store.uploadMemory.giveBack(held) }

    /// Appends the bytes up to the end of a part at a time, sending each part as it fills: the
    /// buffer never holds more than a part, and a part is sent without a copy of it.
    func append(_ bytes: UnsafeRawBufferPointer) throws {
        guard !complete else {
            throw BacklotError(.conflict, "the upload is complete already", context: upload.label)
        }
        appended = appended || bytes.count > 0
        var rest = bytes[...]
        while !rest.isEmpty {
            let room = Int(part) - buffer.count
            let piece = rest.prefix(room)
            buffer.append(contentsOf: piece)
            rest = rest.dropFirst(piece.count)
            if buffer.count == Int(part) {
                try send(buffer)
                buffer.removeAll(keepingCapacity: true)
                try record(stored, multipartID)
                try dropTail()
            }
        }
    }

    /// Uploads the next part.
    private func send(_ bytes: [UInt8]) throws {
        let id =
            try multipartID
            ?? {
                let id = try client.createMultipartUpload(
                    bucket: bucket, key: key, contentType: "application/octet-stream")
                multipartID = id
                try record(stored, id)
                return id
            }()
        parts.append(
            try client.uploadPart(
                bucket: bucket, key: key, uploadID: id, partNumber: parts.count + 1, body: .bytes(bytes)))
        stored += UInt64(bytes.count)
    }

    /// Removes the tail object once its bytes are in a part.
    private func dropTail() throws {
        if let start = tailStart {
            try client.deleteObject(bucket: bucket, key: store.tailPrefix(upload.versionID) + String(start))
            tailStart = nil
        }
    }

    func finish() throws -> UInt64 {
        guard !finished else { return received }
        finished = true
        if complete { return upload.declared }
        if received == upload.declared {
            if !buffer.isEmpty || parts.isEmpty {
                try send(buffer)
                buffer = []
            }
            guard let id = multipartID else {
                throw BacklotError(.io, "the upload has no multipart upload to complete", context: upload.label)
            }
            try client.completeMultipartUpload(bucket: bucket, key: key, uploadID: id, parts: parts)
            complete = true
            try record(upload.declared, nil)
            try dropTail()
            return upload.declared
        }
        if appended, !buffer.isEmpty {
            try client.putObject(
                bucket: bucket, key: store.tailPrefix(upload.versionID) + String(stored), body: .bytes(buffer),
                contentType: "application/octet-stream")
            tailStart = stored
            try record(received, multipartID)
        }
        return received
    }

    func abandon() {
        // The bytes that arrived are the archive's, in order: keep them for the next request.
        _ = try? finish()
    }
}
