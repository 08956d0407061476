import BacklotBasics
import CMicroHTTPD
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// An HTTP/1.1 server on libmicrohttpd, with keep-alive, optional TLS, per-connection time-outs,
/// connection limits (in all, per client address) and graceful shutdown. This file is the only
/// one that touches libmicrohttpd.
///
/// Plain HTTP runs libmicrohttpd's epoll event loop on a small pool of threads
/// (``Configuration/threads``): a connection costs a descriptor and at most
/// ``Configuration/connectionMemory`` bytes, not a thread, so 10,000 idle or slow clients are held
/// while others are served. No pool thread waits for long: what a request may have to wait for
/// (the end of an upload, a management call that publishes) runs on a `BlockingPool` of its own while its
/// connection is suspended. HTTPS keeps one thread per connection, as libmicrohttpd has no thread
/// pool for connections handed over by ``TLSGate`` (`MHD_USE_NO_LISTEN_SOCKET`).
///
/// ```swift
/// let server = try HTTPServer(configuration: .init(host: "127.0.0.1", port: 0)) { request in
///     .respond(.json(200, "{\"ok\":true}"))
/// }
/// print(server.port)
/// server.stop()
/// ```
public final class HTTPServer: Sendable {
    /// Where and how to listen.
    public struct Configuration: Sendable {
        /// An IPv4 or IPv6 address to bind (loopback by default).
        public var host: String
        /// 0 picks a free port (see ``HTTPServer/port``).
        public var port: UInt16
        /// PEM certificate chain and key; nil for plain HTTP.
        public var tls: (certificate: String, key: String)?
        /// Seconds of inactivity after which a connection is closed (slow clients).
        public var connectionTimeout: Int
        /// Threads running libmicrohttpd's event loop on plain HTTP (each with its own epoll set);
        /// not used with TLS. Default ``defaultThreads``. 0 runs one thread per connection instead,
        /// the former model, kept for comparison: every idle client then costs a thread (and
        /// libmicrohttpd sends files in 2 MiB sendfile calls rather than 128 KiB ones).
        public var threads: Int
        /// The most connections open at once from one client address; 0 for no limit. Past it a
        /// new connection is closed as soon as it is accepted. Behind a load balancer or a CDN
        /// every connection comes from its few addresses: raise it, or set 0.
        public var connectionsPerAddress: Int
        /// The most connections open at once, in all (lowered to what the descriptor limit allows;
        /// see ``HTTPServer/connectionLimit``).
        public var connectionLimit: Int
        /// Bytes libmicrohttpd may use per connection for the request head and its buffers.
        public var connectionMemory: Int
        /// Threads for the work a request waits for (uploads ending, publication); plain HTTP only.
        public var workerThreads: Int
        /// Seconds a buffered body (``HTTPRoute/buffer(limit:then:)``: a JSON call, at most its
        /// limit) may take in all, from the request's head on: past it, the next bytes that arrive
        /// close the connection (a client that sends nothing more is closed by
        /// ``connectionTimeout``). The idle time-out alone lets a client trickle a small body for
        /// ever. Streamed bodies (uploads) have no such deadline.
        public var bufferedBodyDeadline: Double

        /// Two event-loop threads per core, at least two.
        public static var defaultThreads: Int { max(2, ProcessInfo.processInfo.activeProcessorCount * 2) }
        /// The default limit per client address.
        public static let defaultConnectionsPerAddress = 64
        /// Room for 10,000 idle connections and more.
        public static let defaultConnectionLimit = 16_384

        public init(
            host: String = "127.0.0.1", port: UInt16 = 0, tls: (certificate: String, key: String)? = nil,
            connectionTimeout: Int = 30,
            threads: Int = Configuration.defaultThreads,
            connectionsPerAddress: Int = Configuration.defaultConnectionsPerAddress,
            connectionLimit: Int = Configuration.defaultConnectionLimit, connectionMemory: Int = 32 << 10,
            workerThreads: Int = 4, bufferedBodyDeadline: Double = 30
        ) {
            self.host = host
            self.port = port
            self.tls = tls
            self.connectionTimeout = connectionTimeout
            self.threads = threads
            self.connectionsPerAddress = connectionsPerAddress
            self.connectionLimit = connectionLimit
            self.connectionMemory = connectionMemory
            self.workerThreads = workerThreads
            self.bufferedBodyDeadline = bufferedBodyDeadline
        }
    }

    /// Answers one request. It runs on one of the event-loop threads for GET, HEAD and requests
    /// with a body (it must not wait: routing, a quick read, opening a file, starting an upload);
    /// other requests, and the `then` of ``HTTPRoute/buffer(limit:then:)`` and
    /// ``HTTPBodyReceiver/finish()``, run on a worker thread, where waiting is allowed.
    public typealias Handler = @Sendable (HTTPRequest) -> HTTPRoute
    /// Told about every finished request: the request, the route that answered, status, body bytes sent, seconds.
    public typealias Observer = @Sendable (HTTPRequest, String, Int, UInt64, Double) -> Void

    /// The port actually bound.
    public let port: UInt16
    /// Whether the server speaks TLS.
    public let usesTLS: Bool
    /// The connection limit in force: the configured one, or less when the descriptor limit
    /// (raised to its hard limit at start) does not allow it.
    public let connectionLimit: Int
    /// Set when fewer than 10,000 connections can be held, saying why and what to raise.
    public let limitNote: String?
    private let daemon: DaemonBox
    private let context: Unmanaged<ServerContext>
    private let gate: TLSGate?
    private let stopped = Mutex(false)

    /// Descriptors kept for everything but connections: files being sent, the database, logs.
    static let reservedDescriptors = 1024

    /// Binds and starts listening.
    /// - Throws: ``BacklotError/Code/io`` when the address cannot be bound, ``BacklotError/Code/invalidInput`` for a bad host.
    public convenience init(configuration: Configuration, observer: Observer? = nil, handler: @escaping Handler) throws
    {
        try self.init(
            listening: ListeningSocket(host: configuration.host, port: configuration.port),
            configuration: configuration,
            observer: observer, handler: handler)
    }

    /// Starts serving on a socket bound beforehand (`configuration.host` and `port` are then not used).
    ///
    /// Plain HTTP: libmicrohttpd accepts on the socket itself. HTTPS: a ``TLSGate`` accepts, answers
    /// plain HTTP sent to the port with a 400, and hands TLS connections to libmicrohttpd.
    /// The soft descriptor limit is raised to the hard one first (``DescriptorLimit``).
    /// - Throws: ``BacklotError/Code/io`` when the daemon cannot start (a TLS certificate and key
    ///   that do not match), ``BacklotError/Code/invalidInput`` for a limit or thread count out of range.
    public init(
        listening: ListeningSocket, configuration: Configuration, observer: Observer? = nil, handler: @escaping Handler
    ) throws {
        for (name, value, range) in [
            ("threads", configuration.threads, 0...1024),
            ("connectionsPerAddress", configuration.connectionsPerAddress, 0...1_000_000),
            ("connectionLimit", configuration.connectionLimit, 1...1_000_000),
            ("connectionMemory", configuration.connectionMemory, 4096...(64 << 20)),
            ("workerThreads", configuration.workerThreads, 1...256),
            ("connectionTimeout", configuration.connectionTimeout, 0...86_400),
        ]
        where !range.contains(value) {
            throw BacklotError(
                .invalidInput, "\(name) must be in \(range.lowerBound)…\(range.upperBound) (got \(value))",
                context: "backlot serve")
        }
        guard configuration.bufferedBodyDeadline.isFinite, configuration.bufferedBodyDeadline > 0 else {
            throw BacklotError(
                .invalidInput, "bufferedBodyDeadline must be a positive number of seconds", context: "backlot serve")
        }
        let (limit, note) = Self.connectionBudget(configuration.connectionLimit)
        let pooled = configuration.tls == nil && configuration.threads > 0
        let workers = pooled ? BlockingPool(threads: configuration.workerThreads, name: "backlot-work") : nil
        let ctx = ServerContext(
            handler: handler, observer: observer, workers: workers,
            bufferedBodyDeadline: configuration.bufferedBodyDeadline)
        let retained = Unmanaged.passRetained(ctx)
        var flags = MHD_ALLOW_SUSPEND_RESUME.rawValue | MHD_USE_ITC.rawValue
        if pooled {
            flags |= MHD_USE_EPOLL_INTERNAL_THREAD.rawValue
        } else {
            flags |=
                MHD_USE_INTERNAL_POLLING_THREAD.rawValue | MHD_USE_THREAD_PER_CONNECTION.rawValue
                | MHD_USE_POLL.rawValue
        }
        if configuration.tls != nil { flags |= MHD_USE_TLS.rawValue | MHD_USE_NO_LISTEN_SOCKET.rawValue }
        if listening.host.contains(":") { flags |= MHD_USE_IPv6.rawValue }

        // Keep every C string alive while the daemon starts.
        let cert = configuration.tls.map { strdup($0.certificate) }
        let key = configuration.tls.map { strdup($0.key) }
        defer {
            free(cert ?? nil)
            free(key ?? nil)
        }
        let socket = listening.take()
        guard socket >= 0 else {
            workers?.stop()
            retained.release()
            throw BacklotError(
                .io, "the listening socket was already taken by another server", context: "backlot serve")
        }
        var options: [MHD_OptionItem] = [
            MHD_OptionItem(
                option: MHD_OPTION.CONNECTION_TIMEOUT, value: configuration.connectionTimeout, ptr_value: nil),
            MHD_OptionItem(
                option: MHD_OPTION.NOTIFY_COMPLETED, value: unsafeBitCast(Callbacks.completed, to: Int.self),
                ptr_value: retained.toOpaque()),
            MHD_OptionItem(option: MHD_OPTION.CONNECTION_LIMIT, value: limit, ptr_value: nil),
            // "%00" stays "%00": a decoded NUL would cut the path short in the C string.
            MHD_OptionItem(option: MHD_OPTION.UNESCAPE_CALLBACK, value: cmhd_unescape_callback(), ptr_value: nil),
            // An encoded slash, backslash or NUL in the path (read before decoding) marks the request for a 400.
            MHD_OptionItem(option: MHD_OPTION.URI_LOG_CALLBACK, value: cmhd_uri_log_callback(), ptr_value: nil),
            MHD_OptionItem(
                option: MHD_OPTION.CONNECTION_MEMORY_LIMIT, value: configuration.connectionMemory, ptr_value: nil),
        ]
        if configuration.connectionsPerAddress > 0 {
            options.append(
                MHD_OptionItem(
                    option: MHD_OPTION.PER_IP_CONNECTION_LIMIT, value: configuration.connectionsPerAddress,
                    ptr_value: nil))
        }
        if configuration.tls == nil {
            // the daemon closes it
            options.append(MHD_OptionItem(option: MHD_OPTION.LISTEN_SOCKET, value: Int(socket), ptr_value: nil))
        }
        if pooled {
            if configuration.threads > 1 {
                options.append(
                    MHD_OptionItem(option: MHD_OPTION.THREAD_POOL_SIZE, value: configuration.threads, ptr_value: nil))
            }
        }
        if let cert, let key {
            options.append(
                MHD_OptionItem(option: MHD_OPTION.HTTPS_MEM_CERT, value: 0, ptr_value: UnsafeMutableRawPointer(cert)))
            options.append(
                MHD_OptionItem(option: MHD_OPTION.HTTPS_MEM_KEY, value: 0, ptr_value: UnsafeMutableRawPointer(key)))
        }
        options.append(MHD_OptionItem(option: MHD_OPTION.END, value: 0, ptr_value: nil))
        let started = options.withUnsafeBufferPointer { opts in
            cmhd_start(flags, 0, Callbacks.access, retained.toOpaque(), opts.baseAddress)
        }
        guard let started else {
            close(socket)
            workers?.stop()
            retained.release()
            throw BacklotError(
                .io, "could not start serving on \(listening.host) port \(listening.port)", context: "backlot serve",
                hint: pooled
                    ? "libmicrohttpd refused the configuration (threads \(configuration.threads), \(limit) connections)"
                    : "the TLS certificate and key may not match")
        }
        let daemon = DaemonBox(started)
        self.daemon = daemon
        context = retained
        port = listening.port
        usesTLS = configuration.tls != nil
        connectionLimit = limit
        limitNote = note
        if configuration.tls != nil {
            let observer = ctx.observer
            do {
                gate = try TLSGate(
                    listener: socket, timeoutSeconds: configuration.connectionTimeout,
                    hand: { fd, address in
                        daemon.add(fd, address: address)
                    },
                    refused: { request, status, bytes in
                        observer?(request, "other", status, bytes, 0)
                    })
            } catch {
                close(socket)
                MHD_stop_daemon(started)
                retained.release()
                throw error
            }
        } else {
            gate = nil
        }
    }

    /// The connection limit the descriptor limit allows (raising the soft limit to the hard one
    /// first), and a note when that is fewer than 10,000 connections.
    static func connectionBudget(_ wanted: Int) -> (Int, String?) {
        guard let descriptors = try? DescriptorLimit.raiseToHardLimit() else { return (wanted, nil) }
        let allowed = max(16, Int(clamping: descriptors.soft) - reservedDescriptors)
        let limit = min(wanted, allowed)
        guard limit < 10_000 else { return (limit, nil) }
        let note =
            "only \(limit) connections can be held at once: the descriptor limit is \(descriptors.soft) (hard limit \(descriptors.hard)); "
            + "raise the hard limit (ulimit -Hn, or LimitNOFILE= for a systemd service) to at least \(10_000 + reservedDescriptors)"
        return (limit, wanted <= allowed ? nil : note)
    }

    /// Number of requests being answered right now.
    public var requestsInFlight: Int { context.takeUnretainedValue().inFlight.load(ordering: .relaxed) }

    /// Number of connections open right now (idle ones included).
    public var openConnections: Int { Int(cmhd_current_connections(daemon.pointer)) }

    /// Stops accepting connections, lets requests in flight finish for up to `grace` seconds, then stops.
    public func stop(grace: Double = 5) {
        let already = stopped.withLock { s -> Bool in
            defer { s = true }
            return s
        }
        guard !already else { return }
        if let gate {
            gate.stop()
        } else if context.takeUnretainedValue().workers == nil {
            let listener = MHD_quiesce_daemon(daemon.pointer)
            if listener >= 0 { close(listener) }
        }
        // With epoll (pooled: a worker pool), libmicrohttpd 0.9.75's quiesce races its own thread, which takes the
        // listening socket out of the epoll set when the connection limit is reached or it sees the
        // quiesce: the second removal fails and the library aborts the process ("Failed to remove
        // listen FD from epoll set"; seen once in make test). So the pooled daemon keeps accepting
        // through the grace period and closes its socket in MHD_stop_daemon.
        daemon.closing()
        let deadline = Date().addingTimeInterval(grace)
        while requestsInFlight > 0 && Date() < deadline { usleep(10_000) }
        // libmicrohttpd must not be stopped with a connection suspended: every job queued runs
        // and resumes its connection first (a request arriving from now on is answered inline).
        let ctx = context.takeUnretainedValue()
        ctx.workers?.stop()
        while ctx.suspended.load(ordering: .acquiring) > 0 { usleep(1000) }
        MHD_stop_daemon(daemon.pointer)
    }

    deinit {
        stop(grace: 0)
        context.release()  // only once the daemon, which calls into it, is stopped
    }
}

/// The daemon pointer, owned by the server.
// Safe because: `pointer` is a `let` to the `MHD_Daemon`, whose calls used here (`MHD_add_connection`,
// `MHD_quiesce_daemon`, `MHD_stop_daemon`) libmicrohttpd makes thread-safe; `add` runs under `open`'s `Mutex`, so
// no connection is added once the daemon is closing.
// Tested: `TLSPortTests.plainHTTPSentToTheHTTPSPortGetsA400SayingSo`.
private final class DaemonBox: @unchecked Sendable {
    let pointer: OpaquePointer
    private let open = Mutex(true)
    init(_ pointer: OpaquePointer) { self.pointer = pointer }

    /// Hands an accepted connection to the daemon (which closes it in any case); closes it when the daemon is stopping.
    func add(_ fd: Int32, address: [UInt8]) {
        open.withLock { isOpen in
            guard isOpen else {
                close(fd)
                return
            }
            _ = address.withUnsafeBytes { raw in
                MHD_add_connection(
                    pointer, fd, raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t(address.count))
            }
        }
    }

    /// No connection is added from now on.
    func closing() { open.withLock { $0 = false } }
}

/// What the C callbacks reach through their `cls` pointer.
final class ServerContext: Sendable {
    let handler: HTTPServer.Handler
    let observer: HTTPServer.Observer?
    let inFlight = Atomic<Int>(0)
    /// The last request number given (``HTTPRequest/number``).
    let requestNumbers = Atomic<UInt64>(0)
    /// Where waiting work runs; nil with one thread per connection (TLS), where it runs inline.
    let workers: BlockingPool?
    /// Connections suspended while a worker prepares their answer.
    let suspended = Atomic<Int>(0)
    /// ``HTTPServer/Configuration/bufferedBodyDeadline``.
    let bufferedBodyDeadline: Double

    init(
        handler: @escaping HTTPServer.Handler, observer: HTTPServer.Observer?, workers: BlockingPool?,
        bufferedBodyDeadline: Double
    ) {
        self.handler = handler
        self.observer = observer
        self.workers = workers
        self.bufferedBodyDeadline = bufferedBodyDeadline
    }
}

/// Per-request state kept in MHD's `con_cls` between calls of the access handler.
///
/// Only one thread touches it at a time: the connection's event-loop thread, or the worker that
/// prepares its answer while the connection is suspended (libmicrohttpd calls nothing for a
/// suspended connection; suspending and resuming order the accesses).
// Safe because: (the paragraph above) libmicrohttpd owns its lifetime through `con_cls` and calls a connection one
// at a time; the suspension orders the worker's accesses. The handover on many connections at once:
// `ConnectionModelTests.slowUploadsOnMoreConnectionsThanPoolThreadsDoNotStarveASmallGet`.
final class RequestState: @unchecked Sendable {
    let request: HTTPRequest
    /// nil until a worker has asked the handler (a request without a body that may wait).
    var route: HTTPRoute?
    let started = Date()
    var buffer: [UInt8] = []
    var failure: HTTPResponse?
    var answered = false
    var status = 0
    var routeLabel = "other"
    var bytes: UInt64 = 0
    /// Body bytes read and dropped after the request was refused.
    var discarded = 0
    /// The buffered body went past ``HTTPServer/Configuration/bufferedBodyDeadline`` and the
    /// connection was closed (logged as 408).
    var timedOut = false
    /// A worker is preparing the answer (the connection is suspended).
    var preparing = false
    /// The answer a worker prepared, queued when the connection is resumed.
    var prepared: HTTPResponse?
    /// How much of a refused body is read and dropped so that the client still gets the answer.
    static let discardLimit = 8 << 20

    init(request: HTTPRequest, route: HTTPRoute?) {
        self.request = request
        self.route = route
    }

    /// The answer once the whole request arrived (asking the handler first if it was not asked yet).
    func answer(_ handler: HTTPServer.Handler) -> HTTPResponse {
        if let failure { return failure }
        let route = route ?? handler(request)
        self.route = route
        switch route {
        case .respond(let r): return r
        case .receive(let receiver): return receiver.finish()
        case .buffer(_, let then): return then(buffer)
        }
    }
}

/// A connection pointer carried to the worker that resumes it.
// Safe because: the worker only passes the pointer to `MHD_resume_connection`, which libmicrohttpd allows from any
// thread for a suspended connection (`MHD_ALLOW_SUSPEND_RESUME` with `MHD_USE_ITC`).
// Tested: `ConnectionModelTests.slowUploadsOnMoreConnectionsThanPoolThreadsDoNotStarveASmallGet`.
private struct ConnectionHandle: @unchecked Sendable {
    let pointer: OpaquePointer
}

private enum Callbacks {
    static let access: MHD_AccessHandlerCallback = { cls, connection, url, method, _, uploadData, uploadSize, conCls in
        guard let cls, let connection, let conCls, let uploadSize else { return MHD_Result.NO }
        let server = Unmanaged<ServerContext>.fromOpaque(cls).takeUnretainedValue()
        // The URI log callback marked a target whose path holds an encoded slash, backslash or NUL.
        let badTarget = conCls.pointee == cmhd_bad_target()
        if conCls.pointee == nil || badTarget {
            // First call: only the head is known. Decide the route; answer on a later call (keeps the connection alive).
            let request = HTTPRequest(
                method: method.map { String(cString: $0) } ?? "GET", path: url.map { String(cString: $0) } ?? "/",
                headers: values(connection, MHD_ValueKind.HEADER_KIND, lowercased: true),
                query: values(connection, MHD_ValueKind.GET_ARGUMENT_KIND, lowercased: false),
                remoteAddress: clientAddress(connection),
                number: server.requestNumbers.wrappingAdd(1, ordering: .relaxed).newValue)
            server.inFlight.wrappingAdd(1, ordering: .relaxed)
            // Refused before any handler sees them: an encoded separator in the path, and a body
            // framed two ways (RFC 9112 §6.1: a proxy in front may read the other framing, and
            // take the rest of this body for a request of its own).
            if let refusal = badTarget ? Self.encodedSeparator : Self.framingRefusal(request) {
                let state = RequestState(request: request, route: .respond(refusal))
                conCls.pointee = Unmanaged.passRetained(state).toOpaque()
                return queue(refusal, on: connection, state: state)
            }
            let hasBody =
                (request.header("Content-Length").map { $0 != "0" } ?? false)
                || request.header("Transfer-Encoding") != nil
            // GET and HEAD (files, quick reads) and requests with a body (whose route must be known
            // before the body is read) are routed here, on the event-loop thread; any other request
            // (a DELETE, a POST without a body) may change things and wait, and is routed by a worker.
            let routeNow = server.workers == nil || hasBody || request.method == "GET" || request.method == "HEAD"
            let state = RequestState(request: request, route: routeNow ? server.handler(request) : nil)
            conCls.pointee = Unmanaged.passRetained(state).toOpaque()
            // An answer that ignores a request body (an error, say) goes out now rather than after a
            // body that may never come; otherwise answer on a later call, which keeps the connection alive.
            if hasBody, case .respond(let response)? = state.route {
                return queue(response, on: connection, state: state)
            }
            // A body declared larger than the route buffers is refused before any of it is read (and
            // before "100 Continue"), so the client sees the 413 instead of a closed connection.
            if case .buffer(let limit, _)? = state.route,
                let declared = request.header("Content-Length").flatMap({ CheckedInteger.parse($0, as: UInt64.self) }),
                declared > UInt64(limit)
            {
                state.failure = Self.tooLarge(limit: limit)
                return queue(state.failure!, on: connection, state: state)
            }
            return MHD_Result.YES
        }
        let state = Unmanaged<RequestState>.fromOpaque(conCls.pointee!).takeUnretainedValue()
        if uploadSize.pointee > 0 {
            let chunk = UnsafeRawBufferPointer(start: uploadData, count: uploadSize.pointee)
            uploadSize.pointee = 0
            guard state.failure == nil else {
                // libmicrohttpd queues an answer only before the body or after all of it: the rest of a
                // refused body is discarded (up to a bound, beyond which the connection is closed) and the
                // error goes out when it ends.
                state.discarded += chunk.count
                return state.discarded <= RequestState.discardLimit ? MHD_Result.YES : MHD_Result.NO
            }
            switch state.route {
            case .respond, nil: break
            case .receive(let receiver):
                // Writing a chunk (at most the connection's buffer) into the page cache is short; the
                // fsync at the end runs on a worker.
                do { try receiver.receive(chunk) } catch let e as HTTPError {
                    state.failure = e.response
                } catch {
                    // Never the error's text: it may name a server path.
                    state.failure = .error(
                        500, code: .internal, "the server could not take the body (its log has the details)")
                }
            case .buffer(let limit, _):
                if Date().timeIntervalSince(state.started) > server.bufferedBodyDeadline {
                    // A body trickled in under the idle time-out: it gets no more time, and no
                    // answer (libmicrohttpd answers only before a body or after all of it).
                    state.timedOut = true
                    return MHD_Result.NO
                }
                if chunk.count > limit - state.buffer.count {
                    state.failure = Self.tooLarge(limit: limit)
                } else {
                    state.buffer.append(contentsOf: chunk)
                }
            }
            return MHD_Result.YES
        }
        if state.answered { return MHD_Result.YES }
        if let prepared = state.prepared {
            state.prepared = nil
            return queue(prepared, on: connection, state: state)
        }
        if state.preparing { return MHD_Result.YES }
        // The whole request arrived. An answer at hand goes out from this thread; one that may wait
        // (an upload's end, a buffered call's work, a request routed late) is prepared by a worker
        // while the connection is suspended, so this thread goes on serving the others.
        if state.failure != nil || state.route.map({ if case .respond = $0 { true } else { false } }) == true {
            return queue(state.answer(server.handler), on: connection, state: state)
        }
        guard let workers = server.workers else {
            return queue(state.answer(server.handler), on: connection, state: state)
        }
        state.preparing = true
        server.suspended.wrappingAdd(1, ordering: .acquiringAndReleasing)
        MHD_suspend_connection(connection)
        let handle = ConnectionHandle(pointer: connection)
        let handler = server.handler
        let job: @Sendable () -> Void = {
            state.prepared = state.answer(handler)
            state.preparing = false
            MHD_resume_connection(handle.pointer)
            server.suspended.wrappingAdd(-1, ordering: .acquiringAndReleasing)
        }
        if !workers.submit(job) { job() }  // stopping: prepared here, the connection resumed at once
        return MHD_Result.YES
    }

    static let noContent: MHD_ContentReaderCallback = { _, _, _, _ in -2 }  // MHD_CONTENT_READER_END_WITH_ERROR

    static let readFile: MHD_ContentReaderCallback = { cls, position, buffer, maximum in
        guard let cls, let buffer else { return -2 }
        return Unmanaged<FileBody>.fromOpaque(cls).takeUnretainedValue().read(at: position, into: buffer, maximum)
    }

    static let releaseFile: MHD_ContentReaderFreeCallback = { cls in
        guard let cls else { return }
        Unmanaged<FileBody>.fromOpaque(cls).release()
    }

    static let completed: MHD_RequestCompletedCallback = { cls, _, conCls, termination in
        // A request refused before its state was made leaves the URI log callback's mark (or nothing).
        guard let cls, let conCls, let raw = conCls.pointee, raw != cmhd_bad_target() else { return }
        let server = Unmanaged<ServerContext>.fromOpaque(cls).takeUnretainedValue()
        let state = Unmanaged<RequestState>.fromOpaque(raw).takeRetainedValue()
        conCls.pointee = nil
        if case .receive(let receiver)? = state.route, !state.answered || state.failure != nil {
            // Ending an interrupted upload syncs what arrived: on a worker, not on this thread.
            if server.workers?.submit({ receiver.abort() }) != true { receiver.abort() }
        }
        // A file opened for an answer that was never queued (the client left first) is closed here.
        if !state.answered {
            // A worker's answer for a request routed late is the route's own answer: closed once.
            let unsent = state.prepared ?? state.route.flatMap { if case .respond(let r) = $0 { r } else { nil } }
            if case .descriptor(let fd, _, _)? = unsent?.body { close(fd) }
        }
        server.inFlight.wrappingAdd(-1, ordering: .relaxed)
        let status =
            termination == MHD_RequestTerminationCode.REQUEST_TERMINATED_COMPLETED_OK
            ? state.status : (state.answered ? state.status : (state.timedOut ? 408 : 499))
        server.observer?(state.request, state.routeLabel, status, state.bytes, Date().timeIntervalSince(state.started))
    }

    /// The 400 for a path holding `%2F`, `%5C` or `%00` (any case).
    static let encodedSeparator: HTTPResponse = {
        HTTPResponse.error(
            400, code: .badPath, "the path holds an encoded slash, backslash or NUL (%2F, %5C or %00)",
            hint: "write separators as \"/\"; a name never holds one")
    }()

    /// The 400 for a request whose body is framed both by `Content-Length` and by
    /// `Transfer-Encoding` (RFC 9112 §6.1), nil for any other request.
    static func framingRefusal(_ request: HTTPRequest) -> HTTPResponse? {
        guard request.header("Content-Length") != nil, request.header("Transfer-Encoding") != nil else { return nil }
        var r = HTTPResponse.error(
            400, code: .badRequest, "the request has both Content-Length and Transfer-Encoding",
            context: "request head", hint: "send one of them (RFC 9112 §6.1)")
        r.headers.append(("Connection", "close"))
        return r
    }

    /// The 413 for a body over a buffering route's limit.
    static func tooLarge(limit: Int) -> HTTPResponse {
        var r = HTTPResponse.error(
            413, code: .tooLarge, "the request body is larger than \(limit) bytes, the most this route accepts",
            route: "api")
        r.headers.append(("Connection", "close"))
        return r
    }

    static func queue(_ response: HTTPResponse, on connection: OpaquePointer, state: RequestState) -> MHD_Result {
        state.answered = true
        state.status = response.status
        state.routeLabel = response.route
        let mhd: OpaquePointer?
        switch response.body {
        case .empty:
            mhd = MHD_create_response_from_buffer(0, nil, MHD_ResponseMemoryMode.RESPMEM_PERSISTENT)
        case .bytes(let bytes):
            mhd = bytes.withUnsafeBytes {
                MHD_create_response_from_buffer(
                    bytes.count, UnsafeMutableRawPointer(mutating: $0.baseAddress),
                    MHD_ResponseMemoryMode.RESPMEM_MUST_COPY)
            }
        case .file(let path, let offset, let length):
            let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
            if fd < 0 {
                return queue(.error(404, code: .notFound, "no such file"), on: connection, state: state)
            }
            mhd = fileResponse(fd, offset: offset, length: length, head: state.request.method == "HEAD")
        case .descriptor(let fd, let offset, let length):
            mhd = fileResponse(fd, offset: offset, length: length, head: state.request.method == "HEAD")
        case .representation(let length):
            // libmicrohttpd sends no body with a 304 and writes Content-Length from the response's
            // size: the representation's. Should it ever ask for content, the reader ends with an error.
            mhd = MHD_create_response_from_callback(length, 4096, Callbacks.noContent, nil, nil)
        }
        guard let mhd else { return MHD_Result.NO }
        defer { MHD_destroy_response(mhd) }
        for (name, value) in response.headers { MHD_add_response_header(mhd, name, value) }
        if state.request.method != "HEAD" { state.bytes = response.body.count }
        return MHD_queue_response(connection, UInt32(response.status), mhd)
    }

    /// Bodies up to this size are read from their file and sent with the head in one write; larger
    /// ones are copied in blocks by ``FileBody`` while few are, else sent with sendfile(2).
    static let smallFileLimit: UInt64 = 64 << 10

    /// A response for `length` bytes of `fd` from `offset`; it takes the descriptor. A small body
    /// (a catalog, a key list) is read at once, which saves the sendfile call and a TCP segment.
    static func fileResponse(_ fd: Int32, offset: UInt64, length: UInt64, head: Bool) -> OpaquePointer? {
        if !head, length > 0, length <= smallFileLimit, let start = off_t(exactly: offset),
            let buffer = malloc(Int(length))
        {
            let count = Int(length)
            var got = 0
            while got < count {
                let n = pread(fd, buffer + got, count - got, start + off_t(got))
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { break }
                got += n
            }
            if got == count,
                let mhd = MHD_create_response_from_buffer(count, buffer, MHD_ResponseMemoryMode.RESPMEM_MUST_FREE)
            {
                close(fd)
                return mhd  // owns the buffer
            }
            free(buffer)
            // Shorter than announced (changed meanwhile): left to the reader below, which ends the
            // connection where the file ends.
        }
        // Copied uncorked while few answers are (``FileBody``); otherwise from the descriptor
        // (sendfile on plain HTTP; past the file's end it stalls until the idle timeout).
        if !head, length > 0, let body = FileBody(fd: fd, offset: offset, length: length) {
            let context = Unmanaged.passRetained(body).toOpaque()
            let mhd = MHD_create_response_from_callback(
                length, body.bufferSize, Callbacks.readFile, context, Callbacks.releaseFile)
            if mhd == nil { Unmanaged<FileBody>.fromOpaque(context).release() }  // closes the descriptor
            return mhd
        }
        let mhd = MHD_create_response_from_fd_at_offset64(length, fd, offset)  // takes the descriptor
        if mhd == nil { close(fd) }
        return mhd
    }

    static func values(_ connection: OpaquePointer, _ kind: MHD_ValueKind, lowercased: Bool) -> [String: String] {
        final class Box {
            var values: [String: String] = [:]
            var lowercased = false
        }
        let box = Box()
        box.lowercased = lowercased
        let iterator: MHD_KeyValueIterator = { cls, _, key, value in
            let b = Unmanaged<Box>.fromOpaque(cls!).takeUnretainedValue()
            if let key {
                let k = String(cString: key)
                b.values[b.lowercased ? HTTPRequest.fieldKey(k) : k] = value.map { String(cString: $0) } ?? ""
            }
            return MHD_Result.YES
        }
        withExtendedLifetime(box) {
            _ = MHD_get_connection_values(connection, kind, iterator, Unmanaged.passUnretained(box).toOpaque())
        }
        return box.values
    }

    static func clientAddress(_ connection: OpaquePointer) -> String {
        guard let address = cmhd_client_address(connection) else { return "" }
        var buffer = [CChar](repeating: 0, count: 64)
        if Int32(address.pointee.sa_family) == AF_INET {
            address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { p in
                var a = p.pointee.sin_addr
                _ = inet_ntop(AF_INET, &a, &buffer, 64)
            }
        } else {
            address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { p in
                var a = p.pointee.sin6_addr
                _ = inet_ntop(AF_INET6, &a, &buffer, 64)
            }
        }
        return buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }
}
