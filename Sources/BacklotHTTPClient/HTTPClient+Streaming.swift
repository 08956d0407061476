import BacklotBasics
import CCurl

#if canImport(Glibc)
import Glibc
#endif

extension BacklotError.Code {
    /// The request never got an answer: the server could not be reached, the connection broke, or
    /// the transfer ran past its deadline. Safe to try again for requests that may be repeated.
    public static let transport = BacklotError.Code("transport", isInvalidInput: false)
}

extension HTTPClient {
    /// The status and headers of a streamed response, and the start of an error body.
    public struct StreamedResponse: Sendable {
        public let status: Int
        /// Header values by lowercased name.
        public let headers: [String: String]
        /// The body of a response whose status is not 2xx, at most `errorBodyLimit` bytes of it
        /// (what an S3 server explains a refusal with). Empty for a 2xx.
        public let errorBody: [UInt8]
        /// Bytes of a 2xx body handed to `receive`.
        public let received: UInt64
    }

    /// Sends a request with headers in the given order (none added but `Content-Length` or
    /// `Transfer-Encoding`, and libcurl's `Host` when `headers` has none) and hands a 2xx body to
    /// `receive` piece by piece, as it arrives: nothing but libcurl's buffer is held in memory.
    ///
    /// The URL's path is sent as it is (no dot-segment squashing), so a signature computed over it holds.
    ///
    /// ```swift
    /// let r = try client.stream("GET", "http://127.0.0.1:7480/bucket/key", headers: [("Range", "bytes=0-9")],
    ///                           bodyLimit: 10) { piece in print(piece.count) }
    /// ```
    /// - Parameters:
    ///   - body: the request body, from memory or a file range.
    ///   - bodyLimit: the most bytes a 2xx body may have; past it the transfer stops with
    ///     ``BacklotError/Code/quotaExceeded``.
    ///   - errorBodyLimit: the most bytes of a non-2xx body kept (the rest is read and dropped).
    ///   - receive: called with each piece of a 2xx body; what it throws stops the transfer and is rethrown.
    /// - Throws: ``BacklotError/Code/transport`` when no complete response arrived (connection
    ///   refused or broken, deadline passed), what `receive` threw, ``BacklotError/Code/io`` when
    ///   a file body cannot be read.
    public func stream(
        _ method: String, _ url: String, headers: [(String, String)], body: Body? = nil, bodyLimit: UInt64,
        errorBodyLimit: Int = 64 << 10, receive: (UnsafeRawBufferPointer) throws -> Void
    ) throws -> StreamedResponse {
        try withoutActuallyEscaping(receive) { receive in
            guard let handle = curl_easy_init() else {
                throw BacklotError(.library, "libcurl could not start a transfer")
            }
            defer { curl_easy_cleanup(handle) }
            let transfer = StreamTransfer(limit: bodyLimit, errorLimit: max(0, errorBodyLimit), receive: receive)
            transfer.pacer = RatePacer.forLimit(bandwidthLimit)
            let context = Unmanaged.passUnretained(transfer).toOpaque()
            var list: UnsafeMutablePointer<curl_slist>? = nil
            defer { curl_slist_free_all(list) }
            for (name, value) in headers { list = curl_slist_append(list, "\(name): \(value)") }
            list = curl_slist_append(list, "Expect:")  // no 100-continue round trip
            list = curl_slist_append(list, "Accept:")  // nothing unsigned that the request does not need

            configure(handle, url: url, headers: list)
            _ = ccurl_setopt_long(handle, CURLOPT_PATH_AS_IS, 1)
            _ = ccurl_setopt_long(handle, CURLOPT_BUFFERSIZE, 256 << 10)
            _ = ccurl_setopt_long(handle, CURLOPT_UPLOAD_BUFFERSIZE, 512 << 10)
            _ = ccurl_setopt_str(handle, CURLOPT_CUSTOMREQUEST, method)
            if method == "HEAD" { _ = ccurl_setopt_long(handle, CURLOPT_NOBODY, 1) }
            _ = ccurl_setopt_write(handle, StreamCallbacks.write)
            _ = ccurl_setopt_ptr(handle, CURLOPT_WRITEDATA, context)
            _ = ccurl_setopt_header(handle, StreamCallbacks.header)
            _ = ccurl_setopt_ptr(handle, CURLOPT_HEADERDATA, context)

            let upload = try body.map { try UploadBody($0) }
            let total = upload?.total ?? 0
            let deadline = self.deadline(forBytes: bodyLimit &+ total)
            _ = ccurl_setopt_long(handle, CURLOPT_TIMEOUT, deadline)
            upload?.attach(to: handle, method: method)
            let (code, detail) = withExtendedLifetime((transfer, upload)) { perform(handle) }
            if let thrown = transfer.thrown { throw thrown }
            if let failure = transfer.failure ?? upload?.failure { throw failure }
            // A server may answer a refusal before it has read the whole body and close the
            // connection: the refusal is the answer, not a broken transfer.
            let answeredEarly = transfer.status >= 400 && (code == CURLE_SEND_ERROR || code == CURLE_RECV_ERROR)
            guard code == CURLE_OK || answeredEarly else {
                if code == CURLE_OPERATION_TIMEDOUT {
                    let e = timedOut(method, url, deadline: deadline, bytes: bodyLimit &+ total)
                    throw BacklotError(.transport, e.message, context: e.context, hint: e.hint)
                }
                throw failure(
                    code, detail, method, url, as: .transport,
                    hint:
                        "check that the server is running and the URL is right; the request is tried again where that is safe"
                )
            }
            var status = 0
            _ = ccurl_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
            if status == 0 { status = transfer.status }
            return StreamedResponse(
                status: status, headers: transfer.headers, errorBody: transfer.errorBody, received: transfer.received)
        }
    }
}

/// One streamed transfer's state, reached from libcurl's callbacks.
private final class StreamTransfer {
    let limit: UInt64
    let errorLimit: Int
    let receive: (UnsafeRawBufferPointer) throws -> Void
    var status = 0
    var headers: [String: String] = [:]
    var errorBody: [UInt8] = []
    var received: UInt64 = 0
    var headerBytes = 0
    var failure: BacklotError?
    var thrown: (any Error)?
    var pacer: RatePacer?

    init(limit: UInt64, errorLimit: Int, receive: @escaping (UnsafeRawBufferPointer) throws -> Void) {
        self.limit = limit
        self.errorLimit = errorLimit
        self.receive = receive
    }
}

private enum StreamCallbacks {
    static let header: curl_write_callback = { data, size, count, context in
        let t = Unmanaged<StreamTransfer>.fromOpaque(context!).takeUnretainedValue()
        t.headerBytes += size * count
        guard t.headerBytes <= maximumHeaderBytes else {
            t.failure = tooManyHeaderBytes()
            return 0
        }
        if let status = parseHeaderLine(data, size * count, into: &t.headers) { t.status = status }
        return size * count
    }

    static let write: curl_write_callback = { data, size, count, context in
        let t = Unmanaged<StreamTransfer>.fromOpaque(context!).takeUnretainedValue()
        let n = size * count
        guard n > 0, let data else { return n }
        let piece = UnsafeRawBufferPointer(start: data, count: n)
        guard (200..<300).contains(t.status) else {
            let room = max(0, t.errorLimit - t.errorBody.count)
            if room > 0 { t.errorBody.append(contentsOf: piece.prefix(room)) }
            return n
        }
        guard t.received + UInt64(n) <= t.limit else {
            t.failure = BacklotError(
                .quotaExceeded,
                "the response body is larger than the \(t.limit) bytes expected; the transfer was stopped")
            return 0
        }
        do {
            try t.receive(piece)
        } catch {
            t.thrown = error
            return 0
        }
        t.received += UInt64(n)
        t.pacer?.pace(afterReceiving: n)
        return n
    }

}
