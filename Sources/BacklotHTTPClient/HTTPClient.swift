import BacklotBasics
import CCurl
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A small synchronous HTTP(S) client on libcurl: custom CA files, uploads streamed from files
/// (with an offset, for resuming), progress, bounded response bodies; bodies streamed both ways in
/// `HTTPClient+Streaming.swift`, connections kept between requests in
/// `HTTPClient+ConnectionCache.swift`. The `HTTPClient` files are the only ones that touch libcurl.
///
/// ```swift
/// let client = HTTPClient(caFile: "data/tls/ca.pem")
/// let r = try client.send("GET", "https://127.0.0.1:8443/api/apps", headers: ["Authorization": "Bearer …"])
/// print(r.status, String(decoding: r.body, as: UTF8.self))
/// ```
public struct HTTPClient: Sendable {
    /// A request body.
    public enum Body: Sendable {
        case bytes([UInt8])
        /// `length` bytes of a file from `offset`.
        case file(path: String, offset: UInt64, length: UInt64)
    }

    /// A response.
    public struct Response: Sendable {
        public let status: Int
        /// Header values by lowercased name.
        public let headers: [String: String]
        public let body: [UInt8]
        /// The server sent more than `expectedBodySize`: the transfer was stopped there.
        public let exceededExpectedSize: Bool
        /// Whether the request went over a connection kept from an earlier one
        /// (``HTTPClient/connectionCache``), with no new TCP or TLS handshake.
        public let reusedConnection: Bool
        public var text: String { String(decoding: body, as: UTF8.self) }
    }

    /// A PEM file of CA certificates to trust (a development server's local CA), or nil for the system's.
    public var caFile: String?
    /// Seconds without progress after which a request fails.
    public var stallTimeout: Int
    /// The largest response body kept in memory (by default 64 MiB: as large as a pack's largest
    /// index, which a client reads in one request).
    public var maximumBodySize: Int
    /// Bytes per second each transfer receives at most (0: no limit): libcurl's limit, and a wait
    /// after each piece that takes the transfer past it (``RatePacer``).
    public var bandwidthLimit: Int
    /// The slowest rate a transfer may keep, in bytes per second: every transfer has an overall
    /// deadline of ``baseDeadline`` plus its bounded size (the declared size, or the limit on what
    /// is read) at this rate, and one that averages under a quarter of it for ``stallTimeout``
    /// seconds is stopped. A server that drips bytes cannot hold a client forever.
    public var minimumRate: Int
    /// Seconds every transfer is given beyond what its size needs (connection, TLS, first byte).
    public var baseDeadline: Int
    /// Headers sent with every request of `send` and `download` that does not set them itself (a
    /// client naming its app to the server).
    public var defaultHeaders: [String: String] = [:]
    /// Where `send` keeps connections open between requests without a body (nil: a connection per
    /// request). Copies of this client share it.
    public var connectionCache: ConnectionCache?

    public init(
        caFile: String? = nil, stallTimeout: Int = 60, maximumBodySize: Int = 64 << 20, bandwidthLimit: Int = 0,
        minimumRate: Int = 4096, baseDeadline: Int = 30
    ) {
        self.caFile = caFile
        self.stallTimeout = stallTimeout
        self.maximumBodySize = maximumBodySize
        self.bandwidthLimit = bandwidthLimit
        self.minimumRate = max(1, minimumRate)
        self.baseDeadline = max(1, baseDeadline)
        _ = HTTPClient.globalInit
    }

    /// The rate the deadlines assume: ``minimumRate``, or less when a bandwidth limit is lower.
    var effectiveMinimumRate: Int { bandwidthLimit > 0 ? max(1, min(minimumRate, bandwidthLimit / 2)) : minimumRate }

    /// The overall deadline, in seconds, of a transfer of at most `bytes` bytes (capped at a week).
    public func deadline(forBytes bytes: UInt64) -> Int {
        let seconds = UInt64(baseDeadline) + bytes / UInt64(effectiveMinimumRate)
        return Int(min(seconds, 7 * 86_400))
    }

    private static let globalInit: Void = { curl_global_init(Int(CURL_GLOBAL_DEFAULT)) }()

    /// Sends a request and waits for the whole response.
    /// - Parameter progress: called with (bytes uploaded, bytes to upload) during uploads.
    /// - Throws: ``BacklotError/Code/io`` when the server cannot be reached, TLS fails, or the body is too large.
    /// - Parameter expectedBodySize: when known, the transfer stops as soon as the server sends more
    ///   (a client never reads more than what was declared).
    /// - Parameter bodyLimit: the most a response of unknown size may be (at most ``maximumBodySize``);
    ///   with the upload's size it sets the transfer's deadline (``deadline(forBytes:)``).
    public func send(
        _ method: String, _ url: String, headers: [String: String] = [:], body: Body? = nil,
        expectedBodySize: Int? = nil,
        bodyLimit: Int? = nil, progress: (@Sendable (UInt64, UInt64) -> Void)? = nil
    ) throws -> Response {
        var storage: [UInt8] = []
        return try send(
            method, url, headers: headers, body: body, expectedBodySize: expectedBodySize, bodyLimit: bodyLimit,
            progress: progress, reusing: &storage)
    }

    /// ``send(_:_:headers:body:expectedBodySize:bodyLimit:progress:)`` with the response's body
    /// written into `storage`'s memory: `storage` is emptied (its capacity kept) and taken, and the
    /// response's body is it. A caller that makes many requests of similar size (a download's
    /// Range requests) hands each body back as the next call's `storage` once it is done with it,
    /// so its buffers are allocated once rather than once a request (measured: freed 2 MiB bodies
    /// stayed in the allocator's arenas and raised a download's resident memory).
    ///
    /// ```swift
    /// var spare: [UInt8] = []
    /// for range in ranges {
    ///     let body = try client.send("GET", url, headers: ["Range": range], expectedBodySize: n, reusing: &spare).body
    ///     use(body)
    ///     spare = body   // the next request writes into the same memory
    /// }
    /// ```
    /// - Throws: as ``send(_:_:headers:body:expectedBodySize:bodyLimit:progress:)``.
    public func send(
        _ method: String, _ url: String, headers: [String: String] = [:], body: Body? = nil,
        expectedBodySize: Int? = nil,
        bodyLimit: Int? = nil, progress: (@Sendable (UInt64, UInt64) -> Void)? = nil,
        reusing storage: inout [UInt8]
    ) throws -> Response {
        try send(
            method, url, headers: headers, body: body, expectedBodySize: expectedBodySize, bodyLimit: bodyLimit,
            progress: progress, reusing: &storage, streaming: nil)
    }

    /// ``send(_:_:headers:body:expectedBodySize:bodyLimit:progress:)`` of a request without a body
    /// whose answer, when its status is `status`, is handed to `receive` piece by piece as it
    /// arrives rather than kept (the response's `body` is then empty); an answer of another status
    /// is kept as usual. On a kept connection (``connectionCache``), as every request without a
    /// body. What `receive` throws stops the transfer and is rethrown.
    ///
    /// ```swift
    /// var received = 0
    /// let r = try client.send("GET", url, headers: ["Range": "bytes=0-1048575"], expectedBodySize: 1 << 20,
    ///                         streaming: 206) { piece in received += piece.count }
    /// ```
    /// - Throws: as ``send(_:_:headers:body:expectedBodySize:bodyLimit:progress:)``, and what
    ///   `receive` throws.
    public func send(
        _ method: String, _ url: String, headers: [String: String] = [:], expectedBodySize: Int? = nil,
        streaming status: Int, to receive: (UnsafeRawBufferPointer) throws -> Void
    ) throws -> Response {
        var storage: [UInt8] = []
        return try withoutActuallyEscaping(receive) { receive in
            try send(
                method, url, headers: headers, body: nil, expectedBodySize: expectedBodySize, bodyLimit: nil,
                progress: nil, reusing: &storage, streaming: (status, receive))
        }
    }

    private func send(
        _ method: String, _ url: String, headers: [String: String], body: Body?, expectedBodySize: Int?,
        bodyLimit: Int?, progress: (@Sendable (UInt64, UInt64) -> Void)?, reusing storage: inout [UInt8],
        streaming: (status: Int, receive: (UnsafeRawBufferPointer) throws -> Void)?
    ) throws -> Response {
        // A request without a body takes a kept connection (and gives it back); others make their own.
        let cache = body == nil ? connectionCache : nil
        guard let handle = cache?.take() ?? curl_easy_init() else {
            throw BacklotError(.library, "libcurl could not start a transfer")
        }
        defer {
            if let cache { cache.giveBack(handle) } else { curl_easy_cleanup(handle) }
        }
        let limit = max(0, min(expectedBodySize ?? bodyLimit ?? maximumBodySize, maximumBodySize))
        let transfer = Transfer(limit: limit)
        transfer.pacer = RatePacer.forLimit(bandwidthLimit)
        transfer.streaming = streaming
        swap(&transfer.body, &storage)  // taken, not copied: the caller's reference is given up
        transfer.body.removeAll(keepingCapacity: true)
        transfer.stopsAtExpectedSize = expectedBodySize != nil
        // A streamed body is not kept: only another status's answer is, as it comes.
        if let expectedBodySize, streaming == nil {
            transfer.body.reserveCapacity(min(expectedBodySize, maximumBodySize))
        }
        let context = Unmanaged.passUnretained(transfer).toOpaque()
        var list: UnsafeMutablePointer<curl_slist>? = nil
        defer { curl_slist_free_all(list) }
        for (k, v) in headers.merging(defaultHeaders, uniquingKeysWith: { given, _ in given }) {
            list = curl_slist_append(list, "\(k): \(v)")
        }
        list = curl_slist_append(list, "Expect:")  // no 100-continue round trip

        configure(handle, url: url, headers: list)
        _ = ccurl_setopt_str(handle, CURLOPT_CUSTOMREQUEST, method)
        if method == "HEAD" { _ = ccurl_setopt_long(handle, CURLOPT_NOBODY, 1) }
        _ = ccurl_setopt_write(handle, Callbacks.write)
        _ = ccurl_setopt_ptr(handle, CURLOPT_WRITEDATA, context)
        _ = ccurl_setopt_header(handle, Callbacks.header)
        _ = ccurl_setopt_ptr(handle, CURLOPT_HEADERDATA, context)

        let upload = try body.map { try UploadBody($0, progress: progress) }
        let deadline = self.deadline(forBytes: UInt64(limit) + (upload?.total ?? 0))
        _ = ccurl_setopt_long(handle, CURLOPT_TIMEOUT, deadline)
        upload?.attach(to: handle, method: method)
        let (code, detail) = withExtendedLifetime((transfer, upload)) { perform(handle) }
        var status = 0
        _ = ccurl_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
        // New connections this request made: none means it went over a kept one.
        var connects = 1
        if ccurl_getinfo_long(handle, CURLINFO_NUM_CONNECTS, &connects) != CURLE_OK { connects = 1 }
        let response = Response(
            status: status, headers: transfer.headers, body: transfer.body,
            exceededExpectedSize: transfer.exceeded && transfer.stopsAtExpectedSize, reusedConnection: connects == 0)
        if let thrown = transfer.thrown { throw thrown }
        if response.exceededExpectedSize { return response }
        if let failure = transfer.failure ?? upload?.failure { throw failure }
        guard code == CURLE_OK else {
            if code == CURLE_OPERATION_TIMEDOUT {
                throw timedOut(method, url, deadline: deadline, bytes: UInt64(limit) + (upload?.total ?? 0))
            }
            throw failure(
                code, detail, method, url, as: .io, hint: "check that the server is running and the URL is right")
        }
        return response
    }
}

extension HTTPClient {
    /// Downloads `url` into the file at `path`, appending from byte `offset` (a Range request when
    /// `offset` > 0), at most `limit` bytes in all.
    /// - Parameter pinnedPublicKey: `sha256//BASE64` of the one public key the server may present
    ///   (what the app trusted in a server-trust challenge, ``serverCertificates(of:)``): the
    ///   certificate is then not checked against a CA, only its key.
    /// - Returns: the status, the headers and the file's size afterwards.
    /// - Throws: ``BacklotError/Code/io`` for transport failures or a body past `limit`;
    ///   ``BacklotError/Code/tls`` when the server's key is not the pinned one.
    public func download(
        _ url: String, to path: String, from offset: UInt64, limit: UInt64?, headers: [String: String] = [:],
        pinnedPublicKey: String? = nil,
        progress: (@Sendable (UInt64, UInt64) -> Void)? = nil, isCancelled: (@Sendable () -> Bool)? = nil
    ) throws -> (status: Int, headers: [String: String], size: UInt64) {
        // The file is often in a folder another program can write (an app's container): a link
        // there is not followed, and only a regular file of one name is written (a hard link to
        // another file would have its bytes replaced too).
        var fd: Int32
        repeat {
            fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0o600)
        } while fd < 0
            && errno == EINTR
        guard fd >= 0 else {
            if errno == ELOOP {
                throw BacklotError(
                    .untrusted, "the download's file is a symbolic link", context: path,
                    hint: "remove it: the download starts again from the beginning")
            }
            throw SystemCall.error("open", path: path)
        }
        let file = FileDescriptor(rawValue: fd, path: path)
        defer { file.close() }
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw SystemCall.error("fstat", path: path) }
        guard st.st_mode & S_IFMT == S_IFREG, st.st_nlink == 1 else {
            throw BacklotError(
                .untrusted, "the download's file is not a regular file of its own (a FIFO, a device or a hard link)",
                context: path, hint: "remove it: the download starts again from the beginning")
        }
        return try download(
            url, into: file, from: offset, limit: limit, headers: headers, pinnedPublicKey: pinnedPublicKey,
            progress: progress, isCancelled: isCancelled)
    }

    /// ``download(_:to:from:limit:headers:pinnedPublicKey:progress:isCancelled:)`` into a file the
    /// caller opened for writing (found relative to a folder's descriptor, say), which it closes.
    public func download(
        _ url: String, into file: FileDescriptor, from offset: UInt64, limit: UInt64?, headers: [String: String] = [:],
        pinnedPublicKey: String? = nil,
        progress: (@Sendable (UInt64, UInt64) -> Void)? = nil, isCancelled: (@Sendable () -> Bool)? = nil
    ) throws -> (status: Int, headers: [String: String], size: UInt64) {
        guard let handle = curl_easy_init() else { throw BacklotError(.library, "libcurl could not start a transfer") }
        defer { curl_easy_cleanup(handle) }
        let fd = file.rawValue
        let sink = FileSink(fd: fd, offset: offset, limit: limit, progress: progress, isCancelled: isCancelled)
        sink.pacer = RatePacer.forLimit(bandwidthLimit)
        var list: UnsafeMutablePointer<curl_slist>? = nil
        defer { curl_slist_free_all(list) }
        for (k, v) in headers.merging(defaultHeaders, uniquingKeysWith: { given, _ in given }) {
            list = curl_slist_append(list, "\(k): \(v)")
        }
        if offset > 0 { list = curl_slist_append(list, "Range: bytes=\(offset)-") }
        configure(handle, url: url, headers: list)
        if let pinnedPublicKey {
            // The app trusted this key (a server-trust challenge): the connection must present
            // it, whoever signed the certificate. The pin is set first, and a libcurl that cannot
            // pin refuses the transfer: checking is never turned off without it.
            guard ccurl_setopt_str(handle, CURLOPT_PINNEDPUBLICKEY, pinnedPublicKey) == CURLE_OK else {
                throw BacklotError(
                    .tls, "this libcurl cannot pin a server's public key, so the trusted key cannot be required",
                    context: url, hint: "install a libcurl built with OpenSSL (Debian's libcurl4-openssl-dev)")
            }
            _ = ccurl_setopt_long(handle, CURLOPT_SSL_VERIFYPEER, 0)
            _ = ccurl_setopt_long(handle, CURLOPT_SSL_VERIFYHOST, 0)
        }
        let context = Unmanaged.passUnretained(sink).toOpaque()
        _ = ccurl_setopt_write(handle, FileCallbacks.write)
        _ = ccurl_setopt_ptr(handle, CURLOPT_WRITEDATA, context)
        _ = ccurl_setopt_header(handle, FileCallbacks.header)
        _ = ccurl_setopt_ptr(handle, CURLOPT_HEADERDATA, context)
        // A declared size bounds the deadline; without one, the longest deadline (a week) and the
        // minimum-rate rule still apply, so no download is waited for forever.
        let deadline = self.deadline(forBytes: limit.map { $0 >= offset ? $0 - offset : 0 } ?? UInt64.max)
        _ = ccurl_setopt_long(handle, CURLOPT_TIMEOUT, deadline)
        let (code, detail) = withExtendedLifetime(sink) { perform(handle) }
        var status = 0
        _ = ccurl_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
        if let failure = sink.failure { throw failure }
        guard code == CURLE_OK else {
            if code == CURLE_OPERATION_TIMEDOUT {
                throw timedOut(
                    "GET", url, deadline: deadline, bytes: limit.map { $0 >= offset ? $0 - offset : 0 } ?? UInt64.max)
            }
            throw failure(code, detail, "GET", url, as: .io, hint: nil)
        }
        fsync(fd)
        return (status, sink.headers, sink.offset)
    }
}

extension HTTPClient {
    /// The options every transfer shares: URL and headers, no signals, no redirects, time-outs,
    /// the CA file and the bandwidth limit.
    func configure(_ handle: UnsafeMutableRawPointer, url: String, headers: UnsafeMutablePointer<curl_slist>?) {
        _ = ccurl_setopt_str(handle, CURLOPT_URL, url)
        _ = ccurl_setopt_slist(handle, CURLOPT_HTTPHEADER, headers)
        _ = ccurl_setopt_long(handle, CURLOPT_NOSIGNAL, 1)
        _ = ccurl_setopt_long(handle, CURLOPT_FOLLOWLOCATION, 0)
        _ = ccurl_setopt_long(handle, CURLOPT_CONNECTTIMEOUT, 15)
        _ = ccurl_setopt_long(handle, CURLOPT_LOW_SPEED_LIMIT, max(1, effectiveMinimumRate / 4))
        _ = ccurl_setopt_long(handle, CURLOPT_LOW_SPEED_TIME, stallTimeout)
        _ = ccurl_setopt_str(handle, CURLOPT_USERAGENT, "backlot/0.1")
        if let caFile { _ = ccurl_setopt_str(handle, CURLOPT_CAINFO, caFile) }
        if bandwidthLimit > 0 { _ = ccurl_setopt_off(handle, CURLOPT_MAX_RECV_SPEED_LARGE, curl_off_t(bandwidthLimit)) }
    }
}

extension HTTPClient {
    /// Runs a configured transfer; returns libcurl's result and its detailed message of a failure
    /// (for a TLS failure, the certificate's problem: "SSL certificate problem: …").
    func perform(_ handle: UnsafeMutableRawPointer) -> (code: CURLcode, detail: String) {
        var buffer = [CChar](repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        let code = buffer.withUnsafeMutableBufferPointer { b -> CURLcode in
            _ = ccurl_setopt_ptr(handle, CURLOPT_ERRORBUFFER, b.baseAddress)
            defer { _ = ccurl_setopt_ptr(handle, CURLOPT_ERRORBUFFER, nil) }
            return curl_easy_perform(handle)
        }
        let detail = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return (code, detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail)
    }

    /// The results of libcurl that mean the TLS connection could not be verified or set up.
    static let tlsFailures: [CURLcode] = [
        CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CONNECT_ERROR, CURLE_SSL_CACERT_BADFILE,
        CURLE_SSL_CERTPROBLEM, CURLE_SSL_ISSUER_ERROR, CURLE_SSL_PINNEDPUBKEYNOTMATCH,
        CURLE_SSL_INVALIDCERTSTATUS, CURLE_SSL_CRL_BADFILE,
    ]

    /// The error of a transfer that ended without an answer. A TLS failure is
    /// ``BacklotError/Code/tls`` with the certificate's problem and what to trust, never a network
    /// error: waiting for the network would not mend it.
    func failure(
        _ code: CURLcode, _ detail: String, _ method: String, _ url: String, as network: BacklotError.Code,
        hint: String?
    ) -> BacklotError {
        guard Self.tlsFailures.contains(code) else {
            return BacklotError(network, "\(method) \(url) failed: \(detail)", context: url, hint: hint)
        }
        let host = URL(string: url)?.host ?? url
        if detail.contains("certificate has expired") {
            // The CA file is the right one; a certificate of the chain is past its date.
            let which =
                caFile.map { "the CA in \($0), or the server certificate it signed," }
                ?? "the server's certificate or its CA"
            return BacklotError(
                .tls, "the TLS connection to \(host) could not be verified: \(detail)", context: url,
                hint:
                    "\(which) is past its expiry date (or this machine's clock is wrong): renew it on the server; a backlot serve with --tls auto names the expired certificate at its start and says how (move DATA/tls aside and start again, then trust the new ca.pem)"
            )
        }
        let trust =
            caFile.map {
                "the server's certificate must be signed by the CA in \($0) and name \(host); check that this file is that server's CA"
            }
            ?? "trust the server's CA: give its certificate file (--ca FILE, or BacklotCAFile in an agent's configuration; backlot serve prints its path), or install it in the system's store"
        return BacklotError(
            .tls, "the TLS connection to \(host) could not be verified: \(detail)", context: url, hint: trust)
    }

    /// The error of a transfer stopped by its deadline or by the minimum rate.
    func timedOut(_ method: String, _ url: String, deadline: Int, bytes: UInt64) -> BacklotError {
        BacklotError(
            .io,
            "\(method) \(url) took longer than its deadline (\(deadline) s for at most \(bytes) bytes at \(effectiveMinimumRate) bytes/s) or stalled",
            context: url,
            hint: "the server or the network is too slow; it is tried again later (the minimum rate is configurable)")
    }
}

/// The first byte of a `Content-Range: bytes FIRST-LAST/SIZE` value, or nil when it is not one.
func contentRangeStart(_ value: String) -> UInt64? {
    let v = value.trimmingCharacters(in: .whitespaces)
    guard v.lowercased().hasPrefix("bytes "), let dash = v.firstIndex(of: "-") else { return nil }
    return CheckedInteger.parse(
        v[v.index(v.startIndex, offsetBy: 6)..<dash].trimmingCharacters(in: .whitespaces), as: UInt64.self)
}

/// The most bytes of response headers a transfer takes (all its responses together): a server
/// that sends more is stopped, whatever libcurl's own limit.
let maximumHeaderBytes = 256 << 10

/// The error of a transfer whose headers passed ``maximumHeaderBytes``.
func tooManyHeaderBytes() -> BacklotError {
    BacklotError(.io, "the server sent more than \(maximumHeaderBytes) bytes of headers; the transfer was stopped")
}

/// Reads one header line into `headers` (a status line starts a new response: redirects, 100-continue);
/// returns the status code of a status line.
func parseHeaderLine(_ data: UnsafeMutablePointer<CChar>?, _ count: Int, into headers: inout [String: String]) -> Int? {
    let line = String(decoding: UnsafeRawBufferPointer(start: data, count: count), as: UTF8.self)
    if line.hasPrefix("HTTP/") {
        headers = [:]
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }
    if let colon = line.firstIndex(of: ":") {
        headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(
            in: .whitespacesAndNewlines)
    }
    return nil
}

/// A download's destination, reached from libcurl's callbacks. Writes only a 200 (from the start)
/// or a 206 (at the offset) body.
// Safe because: libcurl calls the callbacks that reach it (through `CURLOPT_WRITEDATA`/`HEADERDATA`, an unretained
// pointer whose lifetime the transfer's call covers) on the thread inside `curl_easy_perform`, one at a time; it is
// read only after that call returned.
// Tested: `HTTPClientTests.downloadsFromThreadsAtOnceEachWriteTheirOwnFile`.
private final class FileSink: @unchecked Sendable {
    let fd: Int32
    var offset: UInt64
    let start: UInt64
    let limit: UInt64?
    var headers: [String: String] = [:]
    var status = 0
    var failure: BacklotError?
    var restarted = false
    var rangeChecked = false
    var headerBytes = 0
    let progress: (@Sendable (UInt64, UInt64) -> Void)?
    let isCancelled: (@Sendable () -> Bool)?
    var pacer: RatePacer?

    init(
        fd: Int32, offset: UInt64, limit: UInt64?, progress: (@Sendable (UInt64, UInt64) -> Void)?,
        isCancelled: (@Sendable () -> Bool)?
    ) {
        self.fd = fd
        self.offset = offset
        start = offset
        self.limit = limit
        self.progress = progress
        self.isCancelled = isCancelled
    }
}

private enum FileCallbacks {
    static let header: curl_write_callback = { data, size, count, context in
        let s = Unmanaged<FileSink>.fromOpaque(context!).takeUnretainedValue()
        s.headerBytes += size * count
        guard s.headerBytes <= maximumHeaderBytes else {
            s.failure = tooManyHeaderBytes()
            return 0
        }
        if let status = parseHeaderLine(data, size * count, into: &s.headers) { s.status = status }
        return size * count
    }

    static let write: curl_write_callback = { data, size, count, context in
        let s = Unmanaged<FileSink>.fromOpaque(context!).takeUnretainedValue()
        let n = size * count
        if s.isCancelled?() == true {
            s.failure = BacklotError(.cancelled, "the download was cancelled")
            return 0
        }
        if s.status == 200 && s.start > 0 && !s.restarted {
            // The server ignored the Range: start over from the beginning.
            s.offset = 0
            ftruncate(s.fd, 0)
            s.restarted = true
        } else if s.status != 200 && s.status != 206 {
            return n  // an error body: not written
        }
        if s.status == 206 && !s.rangeChecked {
            // A resumed download appends only the bytes asked for: a 206 for another range (or of
            // another representation's length) would splice foreign bytes into the file.
            s.rangeChecked = true
            guard let range = s.headers["content-range"], let start = contentRangeStart(range), start == s.start else {
                s.failure = BacklotError(
                    .io,
                    "the server answered the resumed download with another range (\(s.headers["content-range"] ?? "no Content-Range")) than bytes \(s.start)-",
                    hint: "the server's file may have changed; the download starts over later")
                return 0
            }
        }
        if let limit = s.limit, s.offset + UInt64(n) > limit {
            s.failure = BacklotError(
                .quotaExceeded, "the server sent more than the \(limit) bytes expected; the transfer was stopped")
            return 0
        }
        let written = pwrite(s.fd, data, n, off_t(s.offset))
        guard written == n else {
            s.failure = SystemCall.error("write", path: "download")
            return 0
        }
        s.offset += UInt64(n)
        s.progress?(s.offset, s.limit ?? 0)
        s.pacer?.pace(afterReceiving: n, isCancelled: s.isCancelled)
        return n
    }
}

/// One transfer's state, reached from libcurl's callbacks.
// Safe because: libcurl calls the callbacks that reach it (an unretained pointer in
// `CURLOPT_WRITEDATA`/`HEADERDATA`, alive for the transfer's call) on the thread inside `curl_easy_perform`, one at
// a time; it is read only after that call returned.
// Tested: `HTTPClientTests.downloadsFromThreadsAtOnceEachWriteTheirOwnFile`.
private final class Transfer: @unchecked Sendable {
    var body: [UInt8] = []
    var headers: [String: String] = [:]
    var failure: BacklotError?
    var exceeded = false
    var stopsAtExpectedSize = false
    var headerBytes = 0
    let limit: Int
    /// The status of the response being received (the last status line seen).
    var status = 0
    /// Where a body of the given status goes instead of `body`, and what it threw.
    var streaming: (status: Int, receive: (UnsafeRawBufferPointer) throws -> Void)?
    var streamed = 0
    var thrown: (any Error)?
    var pacer: RatePacer?

    init(limit: Int) {
        self.limit = limit
    }
}

private enum Callbacks {
    static let write: curl_write_callback = { data, size, count, context in
        let t = Unmanaged<Transfer>.fromOpaque(context!).takeUnretainedValue()
        let n = size * count
        let piece = UnsafeRawBufferPointer(start: data, count: n)
        let streamed = t.streaming.map { $0.status == t.status } ?? false
        guard (streamed ? t.streamed : t.body.count) + n <= t.limit else {
            t.exceeded = true
            t.failure = BacklotError(.io, "the response is larger than \(t.limit) bytes; the transfer was stopped")
            return 0
        }
        if streamed {
            t.streamed += n
            do { try t.streaming?.receive(piece) } catch {
                t.thrown = error
                return 0
            }
        } else if n > 0 {
            t.body.append(contentsOf: piece)
        }
        t.pacer?.pace(afterReceiving: n)
        return n
    }

    static let header: curl_write_callback = { data, size, count, context in
        let t = Unmanaged<Transfer>.fromOpaque(context!).takeUnretainedValue()
        t.headerBytes += size * count
        guard t.headerBytes <= maximumHeaderBytes else {
            t.failure = tooManyHeaderBytes()
            return 0
        }
        if let status = parseHeaderLine(data, size * count, into: &t.headers) { t.status = status }
        return size * count
    }

}
