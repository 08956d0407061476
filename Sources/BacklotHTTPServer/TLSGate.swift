import BacklotBasics
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Accepts the connections of an HTTPS port and looks at the first byte each one sends, without
/// consuming it: a TLS record (a ClientHello starts with 0x16, and anything else that is not an
/// HTTP method) goes to libmicrohttpd, which does the handshake; plain HTTP (a request line
/// starting with a method's capital letter) gets a short 400 saying to use https — as nginx
/// answers "The plain HTTP request was sent to HTTPS port" — instead of a connection that just
/// drops.
///
/// libmicrohttpd cannot do this itself: its accept policy sees only the address, and a started
/// connection is already its own. So the gate owns the listening socket and hands TLS
/// connections over with `MHD_add_connection` (the daemon runs with `MHD_USE_NO_LISTEN_SOCKET`).
final class TLSGate: Sendable {
    /// Takes a connection for TLS (the descriptor and the client's address).
    typealias Hand = @Sendable (Int32, [UInt8]) -> Void
    /// Told about each plain-HTTP request answered here: the request head, status, body bytes.
    typealias Refused = @Sendable (HTTPRequest, Int, UInt64) -> Void

    private let listener: Int32
    private let wake: (read: Int32, write: Int32)
    private let hand: Hand
    private let refused: Refused
    private let timeout: Int32
    private let running = Atomic<Int>(0)
    private let stopping = Atomic<Bool>(false)

    /// Starts accepting on `listener` (which the gate closes when it stops).
    init(listener: Int32, timeoutSeconds: Int, hand: @escaping Hand, refused: @escaping Refused) throws {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw SystemCall.error("pipe", path: "the HTTPS listener") }
        _ = fcntl(fds[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(fds[1], F_SETFD, FD_CLOEXEC)
        self.listener = listener
        wake = (fds[0], fds[1])
        self.hand = hand
        self.refused = refused
        timeout = Int32(clamping: max(1, min(timeoutSeconds, 3600)) * 1000)
        let thread = Thread { [self] in acceptLoop() }
        thread.name = "backlot TLS gate"
        running.wrappingAdd(1, ordering: .relaxed)
        thread.start()
    }

    /// Stops accepting, wakes every connection still being looked at, and waits until none is left
    /// (so nothing is handed over afterwards).
    func stop() {
        guard !stopping.exchange(true, ordering: .acquiringAndReleasing) else { return }
        var byte: UInt8 = 1
        _ = write(wake.write, &byte, 1)
        while running.load(ordering: .acquiring) > 0 { usleep(1000) }
        close(listener)
        close(wake.read)
        close(wake.write)
    }

    private func acceptLoop() {
        defer { running.wrappingAdd(-1, ordering: .releasing) }
        while !stopping.load(ordering: .acquiring) {
            var fds = [
                pollfd(fd: listener, events: Int16(POLLIN), revents: 0),
                pollfd(fd: wake.read, events: Int16(POLLIN), revents: 0),
            ]
            let n = poll(&fds, 2, -1)
            if n < 0 {
                if errno == EINTR { continue }
                usleep(10_000)
                continue
            }
            if fds[1].revents != 0 { return }
            guard fds[0].revents != 0 else { continue }
            var address = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let client = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { accept(listener, $0, &length) }
            }
            if client < 0 {
                // Out of descriptors or a connection reset before it was taken: wait a moment, go on.
                if errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM { usleep(50_000) }
                continue
            }
            _ = fcntl(client, F_SETFD, FD_CLOEXEC)
            let bytes = withUnsafeBytes(of: &address) { Array($0.prefix(Int(length))) }
            running.wrappingAdd(1, ordering: .relaxed)
            let thread = Thread { [self] in
                defer { running.wrappingAdd(-1, ordering: .releasing) }
                sort(client, address: bytes)
            }
            thread.start()
        }
    }

    /// Waits for the first byte (at most the connection time-out) and decides.
    private func sort(_ fd: Int32, address: [UInt8]) {
        guard let first = waitForByte(fd, peek: true) else {
            close(fd)
            return
        }
        if first >= UInt8(ascii: "A") && first <= UInt8(ascii: "Z") {
            answerPlainHTTP(fd)
        } else if stopping.load(ordering: .acquiring) {
            close(fd)
        } else {
            hand(fd, address)  // takes the descriptor
        }
    }

    /// The next byte (peeked or read), or nil on time-out, end of stream, error, or stop.
    private func waitForByte(_ fd: Int32, peek: Bool, timeout: Int32? = nil) -> UInt8? {
        var fds = [
            pollfd(fd: fd, events: Int16(POLLIN), revents: 0), pollfd(fd: wake.read, events: Int16(POLLIN), revents: 0),
        ]
        while true {
            let n = poll(&fds, 2, timeout ?? self.timeout)
            if n < 0 && errno == EINTR { continue }
            guard n > 0, fds[1].revents == 0, fds[0].revents != 0 else { return nil }
            var byte: UInt8 = 0
            let got = recv(fd, &byte, 1, peek ? Int32(MSG_PEEK) : 0)
            if got < 0 && errno == EINTR { continue }
            return got == 1 ? byte : nil
        }
    }

    /// Reads the request head (bounded), answers 400 and closes gracefully so that the answer is
    /// not lost to a reset.
    private func answerPlainHTTP(_ fd: Int32) {
        defer { close(fd) }
        var head: [UInt8] = []
        while head.count < 8192, !head.ends(with: [13, 10, 13, 10]), !head.ends(with: [10, 10]) {
            guard let byte = waitForByte(fd, peek: false, timeout: min(timeout, 2000)) else { break }
            head.append(byte)
        }
        // Lines split on LF bytes ("\r\n" is one Character in Swift, so not on the String).
        let lines = head.split(separator: 10).map {
            String(decoding: $0, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        }
        let requestLine = lines.first?.split(separator: " ") ?? []
        let method = requestLine.first.map(String.init) ?? ""
        let path = requestLine.count > 1 ? String(requestLine[1]) : "/"
        var host = ""
        for line in lines.dropFirst() where line.lowercased().hasPrefix("host:") {
            host = String(line.dropFirst(5)).trimmingCharacters(in: .whitespaces)
        }
        let safeHost =
            host.allSatisfy({ $0.isLetter || $0.isNumber || "-.:[]".contains($0) }) && !host.isEmpty ? host : "HOST"
        let message = "The plain HTTP request was sent to HTTPS port: use https://\(safeHost)/"
        let body = HTTPResponse.error(400, code: .plainHTTPToHTTPSPort, message).body
        guard case .bytes(let bytes) = body else { return }
        let response =
            Array(
                "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: \(bytes.count)\r\nConnection: close\r\n\r\n"
                    .utf8) + bytes
        var sent = 0
        while sent < response.count {
            let n = response[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            sent += n
        }
        // Lingering close: stop writing, read what the client still sends (briefly), then close.
        shutdown(fd, Int32(SHUT_WR))
        var drained = 0
        while drained < 65_536, waitForByte(fd, peek: false, timeout: 1000) != nil { drained += 1 }
        refused(
            HTTPRequest(method: method, path: path, headers: host.isEmpty ? [:] : ["host": host]), 400,
            UInt64(bytes.count))
    }
}

extension Array where Element == UInt8 {
    fileprivate func ends(with suffix: [UInt8]) -> Bool {
        count >= suffix.count && Array(self[(count - suffix.count)...]) == suffix
    }
}
