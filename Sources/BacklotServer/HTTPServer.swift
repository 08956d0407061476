import BacklotBasics
import CMicroHTTPD
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// An HTTP/1.1 server on libmicrohttpd: one thread per connection (so a slow client never blocks
/// the others, and TLS stays fast), keep-alive, optional TLS, a per-connection time-out, and
/// graceful shutdown. This file is the only one that touches libmicrohttpd.
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

        public init(host: String = "127.0.0.1", port: UInt16 = 0, tls: (certificate: String, key: String)? = nil, connectionTimeout: Int = 30) {
            self.host = host
            self.port = port
            self.tls = tls
            self.connectionTimeout = connectionTimeout
        }
    }

    /// Answers one request (called on the connection's thread).
    public typealias Handler = @Sendable (HTTPRequest) -> HTTPRoute
    /// Told about every finished request: the request, the route that answered, status, body bytes sent, seconds.
    public typealias Observer = @Sendable (HTTPRequest, String, Int, UInt64, Double) -> Void

    /// The port actually bound.
    public let port: UInt16
    /// Whether the server speaks TLS.
    public let usesTLS: Bool
    private let daemon: DaemonBox
    private let context: Unmanaged<ServerContext>
    private let gate: TLSGate?
    private let stopped = Mutex(false)

    /// Binds and starts listening.
    /// - Throws: ``BacklotError/Code/io`` when the address cannot be bound, ``BacklotError/Code/invalidInput`` for a bad host.
    public convenience init(configuration: Configuration, observer: Observer? = nil, handler: @escaping Handler) throws {
        try self.init(listening: ListeningSocket(host: configuration.host, port: configuration.port), configuration: configuration,
                      observer: observer, handler: handler)
    }

    /// Starts serving on a socket bound beforehand (`configuration.host` and `port` are then not used).
    ///
    /// Plain HTTP: libmicrohttpd accepts on the socket itself. HTTPS: a ``TLSGate`` accepts, answers
    /// plain HTTP sent to the port with a 400, and hands TLS connections to libmicrohttpd.
    /// - Throws: ``BacklotError/Code/io`` when the daemon cannot start (a TLS certificate and key that do not match).
    public init(listening: ListeningSocket, configuration: Configuration, observer: Observer? = nil, handler: @escaping Handler) throws {
        let ctx = ServerContext(handler: handler, observer: observer)
        let retained = Unmanaged.passRetained(ctx)
        var flags = MHD_USE_INTERNAL_POLLING_THREAD.rawValue | MHD_USE_THREAD_PER_CONNECTION.rawValue | MHD_USE_POLL.rawValue
            | MHD_ALLOW_SUSPEND_RESUME.rawValue | MHD_USE_ITC.rawValue
        if configuration.tls != nil { flags |= MHD_USE_TLS.rawValue | MHD_USE_NO_LISTEN_SOCKET.rawValue }
        if listening.host.contains(":") { flags |= MHD_USE_IPv6.rawValue }

        // Keep every C string alive while the daemon starts.
        let cert = configuration.tls.map { strdup($0.certificate) }, key = configuration.tls.map { strdup($0.key) }
        defer { free(cert ?? nil); free(key ?? nil) }
        let socket = listening.take()
        guard socket >= 0 else {
            retained.release()
            throw BacklotError(.io, "the listening socket was already taken by another server", context: "backlot serve")
        }
        var options: [MHD_OptionItem] = [
            MHD_OptionItem(option: MHD_OPTION.CONNECTION_TIMEOUT, value: configuration.connectionTimeout, ptr_value: nil),
            MHD_OptionItem(option: MHD_OPTION.NOTIFY_COMPLETED, value: unsafeBitCast(Callbacks.completed, to: Int.self), ptr_value: retained.toOpaque()),
        ]
        if configuration.tls == nil {
            options.append(MHD_OptionItem(option: MHD_OPTION.LISTEN_SOCKET, value: Int(socket), ptr_value: nil))   // the daemon closes it
        }
        if let cert, let key {
            options.append(MHD_OptionItem(option: MHD_OPTION.HTTPS_MEM_CERT, value: 0, ptr_value: UnsafeMutableRawPointer(cert)))
            options.append(MHD_OptionItem(option: MHD_OPTION.HTTPS_MEM_KEY, value: 0, ptr_value: UnsafeMutableRawPointer(key)))
        }
        options.append(MHD_OptionItem(option: MHD_OPTION.END, value: 0, ptr_value: nil))
        let started = options.withUnsafeBufferPointer { opts in
            cmhd_start(flags, 0, Callbacks.access, retained.toOpaque(), opts.baseAddress)
        }
        guard let started else {
            close(socket)
            retained.release()
            throw BacklotError(.io, "could not start serving on \(listening.host) port \(listening.port)", context: "backlot serve",
                               hint: "the TLS certificate and key may not match")
        }
        let daemon = DaemonBox(started)
        self.daemon = daemon
        context = retained
        port = listening.port
        usesTLS = configuration.tls != nil
        if configuration.tls != nil {
            let observer = ctx.observer
            do {
                gate = try TLSGate(listener: socket, timeoutSeconds: configuration.connectionTimeout, hand: { fd, address in
                    daemon.add(fd, address: address)
                }, refused: { request, status, bytes in
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

    /// Number of requests being answered right now.
    public var requestsInFlight: Int { context.takeUnretainedValue().inFlight.load(ordering: .relaxed) }

    /// Stops accepting connections, lets requests in flight finish for up to `grace` seconds, then stops.
    public func stop(grace: Double = 5) {
        let already = stopped.withLock { s -> Bool in defer { s = true }; return s }
        guard !already else { return }
        if let gate {
            gate.stop()
        } else {
            let listener = MHD_quiesce_daemon(daemon.pointer)
            if listener >= 0 { close(listener) }
        }
        daemon.closing()
        let deadline = Date().addingTimeInterval(grace)
        while requestsInFlight > 0 && Date() < deadline { usleep(10_000) }
        MHD_stop_daemon(daemon.pointer)
    }

    deinit {
        stop(grace: 0)
        context.release()   // only once the daemon, which calls into it, is stopped
    }
}

/// The daemon pointer, owned by the server.
private final class DaemonBox: @unchecked Sendable {
    let pointer: OpaquePointer
    private let open = Mutex(true)
    init(_ pointer: OpaquePointer) { self.pointer = pointer }

    /// Hands an accepted connection to the daemon (which closes it in any case); closes it when the daemon is stopping.
    func add(_ fd: Int32, address: [UInt8]) {
        open.withLock { isOpen in
            guard isOpen else { close(fd); return }
            _ = address.withUnsafeBytes { raw in
                MHD_add_connection(pointer, fd, raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t(address.count))
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

    init(handler: @escaping HTTPServer.Handler, observer: HTTPServer.Observer?) {
        self.handler = handler
        self.observer = observer
    }
}

/// Per-request state kept in MHD's `con_cls` between calls of the access handler.
final class RequestState: @unchecked Sendable {
    let request: HTTPRequest
    let route: HTTPRoute
    let started = Date()
    var buffer: [UInt8] = []
    var failure: HTTPResponse?
    var answered = false
    var status = 0
    var routeLabel = "other"
    var bytes: UInt64 = 0
    /// Body bytes read and dropped after the request was refused.
    var discarded = 0
    /// How much of a refused body is read and dropped so that the client still gets the answer.
    static let discardLimit = 8 << 20

    init(request: HTTPRequest, route: HTTPRoute) {
        self.request = request
        self.route = route
    }
}

private enum Callbacks {
    static let access: MHD_AccessHandlerCallback = { cls, connection, url, method, _, uploadData, uploadSize, conCls in
        guard let cls, let connection, let conCls, let uploadSize else { return MHD_Result.NO }
        let server = Unmanaged<ServerContext>.fromOpaque(cls).takeUnretainedValue()
        if conCls.pointee == nil {
            // First call: only the head is known. Decide the route; answer on a later call (keeps the connection alive).
            let request = HTTPRequest(method: method.map { String(cString: $0) } ?? "GET", path: url.map { String(cString: $0) } ?? "/",
                                      headers: values(connection, MHD_ValueKind.HEADER_KIND, lowercased: true),
                                      query: values(connection, MHD_ValueKind.GET_ARGUMENT_KIND, lowercased: false),
                                      remoteAddress: clientAddress(connection))
            server.inFlight.wrappingAdd(1, ordering: .relaxed)
            let state = RequestState(request: request, route: server.handler(request))
            conCls.pointee = Unmanaged.passRetained(state).toOpaque()
            // An answer that ignores a request body (an error, say) goes out now rather than after a
            // body that may never come; otherwise answer on a later call, which keeps the connection alive.
            let hasBody = (request.header("Content-Length").map { $0 != "0" } ?? false) || request.header("Transfer-Encoding") != nil
            if hasBody, case .respond(let response) = state.route { return queue(response, on: connection, state: state) }
            // A body declared larger than the route buffers is refused before any of it is read (and
            // before "100 Continue"), so the client sees the 413 instead of a closed connection.
            if case .buffer(let limit, _) = state.route, let declared = request.header("Content-Length").flatMap({ CheckedInteger.parse($0, as: UInt64.self) }),
               declared > UInt64(limit) {
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
            case .respond: break
            case .receive(let receiver):
                do { try receiver.receive(chunk) } catch let e as HTTPError {
                    state.failure = e.response
                } catch {
                    state.failure = .error(500, code: "internal", "\(error)")
                }
            case .buffer(let limit, _):
                if chunk.count > limit - state.buffer.count {
                    state.failure = Self.tooLarge(limit: limit)
                } else {
                    state.buffer.append(contentsOf: chunk)
                }
            }
            return MHD_Result.YES
        }
        if state.answered { return MHD_Result.YES }
        let response: HTTPResponse
        if let failure = state.failure {
            response = failure
        } else {
            switch state.route {
            case .respond(let r): response = r
            case .receive(let receiver): response = receiver.finish()
            case .buffer(_, let then): response = then(state.buffer)
            }
        }
        return queue(response, on: connection, state: state)
    }

    static let noContent: MHD_ContentReaderCallback = { _, _, _, _ in -2 }   // MHD_CONTENT_READER_END_WITH_ERROR

    static let completed: MHD_RequestCompletedCallback = { cls, _, conCls, termination in
        guard let cls, let conCls, let raw = conCls.pointee else { return }
        let server = Unmanaged<ServerContext>.fromOpaque(cls).takeUnretainedValue()
        let state = Unmanaged<RequestState>.fromOpaque(raw).takeRetainedValue()
        conCls.pointee = nil
        if case .receive(let receiver) = state.route, !state.answered || state.failure != nil { receiver.abort() }
        // A file opened for an answer that was never queued (the client left first) is closed here.
        if !state.answered, case .respond(let response) = state.route, case .descriptor(let fd, _, _) = response.body { close(fd) }
        server.inFlight.wrappingAdd(-1, ordering: .relaxed)
        let status = termination == MHD_RequestTerminationCode.REQUEST_TERMINATED_COMPLETED_OK ? state.status : (state.answered ? state.status : 499)
        server.observer?(state.request, state.routeLabel, status, state.bytes, Date().timeIntervalSince(state.started))
    }

    /// The 413 for a body over a buffering route's limit.
    static func tooLarge(limit: Int) -> HTTPResponse {
        var r = HTTPResponse.error(413, code: "tooLarge", "the request body is larger than \(limit) bytes, the most this route accepts", route: "api")
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
            mhd = bytes.withUnsafeBytes { MHD_create_response_from_buffer(bytes.count, UnsafeMutableRawPointer(mutating: $0.baseAddress), MHD_ResponseMemoryMode.RESPMEM_MUST_COPY) }
        case .file(let path, let offset, let length):
            let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
            if fd < 0 {
                return queue(.error(404, code: "notFound", "no such file"), on: connection, state: state)
            }
            mhd = MHD_create_response_from_fd_at_offset64(length, fd, offset)   // takes the descriptor
            if mhd == nil { close(fd) }
        case .descriptor(let fd, let offset, let length):
            mhd = MHD_create_response_from_fd_at_offset64(length, fd, offset)   // takes the descriptor
            if mhd == nil { close(fd) }
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

    static func values(_ connection: OpaquePointer, _ kind: MHD_ValueKind, lowercased: Bool) -> [String: String] {
        final class Box { var values: [String: String] = [:]; var lowercased = false }
        let box = Box()
        box.lowercased = lowercased
        let iterator: MHD_KeyValueIterator = { cls, _, key, value in
            let b = Unmanaged<Box>.fromOpaque(cls!).takeUnretainedValue()
            if let key {
                let k = String(cString: key)
                b.values[b.lowercased ? k.lowercased() : k] = value.map { String(cString: $0) } ?? ""
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
