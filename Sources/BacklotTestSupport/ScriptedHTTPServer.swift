import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A hostile HTTP server on loopback whose every answer is written by the test: each request (its
/// method, target and headers, its body read and dropped) is handed to `answer`, whose status,
/// headers and body are sent as they are, with `Connection: close`. For clients that must refuse
/// what a broken or malicious server says (an object store's Content-Range, a listing that never
/// ends), where a real server cannot be made to say it.
///
/// ```swift
/// let server = try ScriptedHTTPServer { request in
///     .init(status: 206, headers: [("Content-Range", "bytes 8-15/1")], body: Array(repeating: 0, count: 8))
/// }
/// defer { server.stop() }
/// ```
public final class ScriptedHTTPServer: Sendable {
    /// One request as received.
    public struct Request: Sendable {
        public let method: String
        /// The path and query, as sent.
        public let target: String
        /// Header names in lower case.
        public let headers: [String: String]
    }

    /// One answer, sent as given (a `Content-Length` of the body is added unless `headers` has one).
    public struct Answer: Sendable {
        public var status: Int
        public var headers: [(String, String)]
        public var body: [UInt8]

        public init(status: Int, headers: [(String, String)] = [], body: [UInt8] = []) {
            self.status = status
            self.headers = headers
            self.body = body
        }

        /// An XML answer of status 200.
        public static func xml(_ text: String) -> Answer {
            Answer(status: 200, headers: [("Content-Type", "application/xml")], body: Array(text.utf8))
        }
    }

    public let port: Int
    /// Requests answered so far.
    public var requests: Int { answered.load(ordering: .relaxed) }
    private let listener: Int32
    private let stopped = Atomic<Bool>(false)
    private let answered = Atomic<Int>(0)

    public init(answer: @escaping @Sendable (Request) -> Answer) throws {
        let (fd, bound) = try FreePort.listening()
        port = Int(bound)
        listener = fd
        Thread.detachNewThread { [self] in
            defer { close(fd) }  // here, once accept has returned for good (as DripServer does)
            while !stopped.load(ordering: .relaxed) {
                let client = accept(fd, nil, nil)
                guard client >= 0 else { return }
                Thread.detachNewThread { [self] in
                    defer { close(client) }
                    guard let request = Self.read(client) else { return }
                    let a = answer(request)
                    answered.add(1, ordering: .relaxed)
                    var head = "HTTP/1.1 \(a.status) Scripted\r\nConnection: close\r\n"
                    for (name, value) in a.headers { head += "\(name): \(value)\r\n" }
                    if !a.headers.contains(where: { $0.0.lowercased() == "content-length" }) {
                        head += "Content-Length: \(a.body.count)\r\n"
                    }
                    let bytes = Array((head + "\r\n").utf8) + (request.method == "HEAD" ? [] : a.body)
                    var sent = 0
                    while sent < bytes.count {
                        let n = bytes[sent...].withUnsafeBytes {
                            send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
                        }
                        guard n > 0 else { return }
                        sent += n
                    }
                }
            }
        }
    }

    /// Reads a request's head (at most 64 KiB) and drops its body (`Content-Length`, at most 64 MiB).
    static func read(_ client: Int32) -> Request? {
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let end = Array("\r\n\r\n".utf8)
        var headEnd: Int?
        while headEnd == nil, data.count < 65_536 {
            let n = recv(client, &buffer, buffer.count, 0)
            guard n > 0 else { return nil }
            data += buffer[0..<n]
            if data.count >= 4 {
                headEnd = (0...(data.count - 4)).first { data[$0..<$0 + 4].elementsEqual(end) }
            }
        }
        guard let headEnd else { return nil }
        let lines = String(decoding: data[0..<headEnd], as: UTF8.self).components(separatedBy: "\r\n")
        let first = lines[0].split(separator: " ")
        guard first.count >= 2 else { return nil }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(
                in: .whitespaces)
        }
        var left = min(Int(headers["content-length"] ?? "0") ?? 0, 64 << 20) - (data.count - headEnd - 4)
        while left > 0 {
            let n = recv(client, &buffer, min(buffer.count, left), 0)
            guard n > 0 else { break }
            left -= n
        }
        return Request(method: String(first[0]), target: String(first[1]), headers: headers)
    }

    /// Stops accepting.
    public func stop() {
        stopped.store(true, ordering: .relaxed)
        shutdown(listener, Int32(SHUT_RDWR))
    }
}
