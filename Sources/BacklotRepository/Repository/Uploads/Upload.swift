import BacklotBasics
import BacklotProtocol
import Foundation
import Synchronization

/// An upload in progress: bytes are appended at the end, never past the declared size.
// Safe because: an upload belongs to one request; libmicrohttpd calls a connection's handler on one thread at a
// time, and the worker that ends it runs while the connection is suspended (suspend and resume order the accesses,
// as for `RequestState`); its shared effects go through `Uploads`' `Mutex`es and the database.
// Tested: `ConnectionModelTests.slowUploadsOnMoreConnectionsThanPoolThreadsDoNotStarveASmallGet`.
public final class Upload: @unchecked Sendable {
    let uploads: Uploads
    let versionID: Int64
    public let declared: UInt64
    public var received: UInt64 { sink.received }
    let sink: any UploadSink
    let label: String
    /// Who holds the upload's lease in the metadata (a shared store), nil when it is not leased;
    /// and when the lease was last renewed.
    let leaseOwner: String?
    private var renewed = ContinuousClock.now
    /// When the upload's activity was last recorded (``Uploads/removeAbandoned(olderThan:now:)`` reads it).
    private var touched = ContinuousClock.now
    private var closed = false
    /// This request's close moved the version to processing.
    private var completed = false

    init(
        uploads: Uploads, versionID: Int64, declared: UInt64, sink: any UploadSink, label: String,
        leaseOwner: String?
    ) {
        self.uploads = uploads
        self.versionID = versionID
        self.declared = declared
        self.sink = sink
        self.label = label
        self.leaseOwner = leaseOwner
        _ = uploads.activeUploads.withLock { $0.insert(versionID) }
    }

    /// Appends bytes. - Throws: `quotaExceeded` past the declared size (nothing past it is written),
    ///   or when the app's quota can no longer hold the version (checked every 30 s; what arrived
    ///   stays); `conflict` when the upload's lease was lost to another request.
    public func append(_ bytes: UnsafeRawBufferPointer) throws {
        guard received + UInt64(bytes.count) <= declared else {
            throw BacklotError(
                .quotaExceeded, "the upload is larger than the \(declared) bytes declared", context: label,
                hint: "create a version with the archive's exact size")
        }
        if let leaseOwner, ContinuousClock.now - renewed > .seconds(uploads.leaseDuration / 3) {
            guard try uploads.renewVersionLease(versionID, owner: leaseOwner) else {
                throw BacklotError(
                    .conflict,
                    "this server no longer holds the upload: its lease ran out and another request took it over",
                    context: label)
            }
            renewed = .now
        }
        try sink.append(bytes)
        if ContinuousClock.now - touched > .seconds(30) {
            try? uploads.touchUpload(versionID: versionID)
            touched = .now
            try uploads.requireQuota(forUpload: versionID)
        }
    }

    /// Ends this request's part of the upload, making what arrived durable; when everything
    /// arrived, processing starts — unless `completing` is false (the caller's token was revoked
    /// meanwhile): the bytes stay, the version stays `AWAITING_UPLOAD`, and a request of a token
    /// that may upload it finishes it (a `PUT` at the last byte, with an empty body).
    /// - Returns: whether the upload is complete (always false without `completing`).
    /// - Throws: `quotaExceeded` when the complete version would bring its app over its quota
    ///   (every byte stays; finishing it again once room was made starts processing).
    @discardableResult
    public func close(completing: Bool = true) throws -> Bool {
        guard !closed else { return completed }
        closed = true
        _ = uploads.activeUploads.withLock { $0.remove(versionID) }
        defer {
            if let leaseOwner { uploads.releaseVersionLease(versionID, state: .awaitingUpload, owner: leaseOwner) }
        }
        let received = try sink.finish()
        try? uploads.touchUpload(versionID: versionID)
        guard completing, received == declared else { return false }
        try uploads.uploadFinished(versionID: versionID)
        completed = true
        return true
    }

    deinit {
        if !closed {
            _ = uploads.activeUploads.withLock { $0.remove(versionID) }
            sink.abandon()
            if let leaseOwner { uploads.releaseVersionLease(versionID, state: .awaitingUpload, owner: leaseOwner) }
        }
    }
}
