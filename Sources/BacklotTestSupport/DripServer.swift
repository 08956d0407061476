import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A hostile HTTP server on loopback that answers every request with a valid status line and
/// headers, then drips the body a few bytes at a time, slower than any sane client accepts.
///
/// ```swift
/// let drip = try DripServer(bytesPerSecond: 2)
/// defer { drip.stop() }
/// // GET http://127.0.0.1:\(drip.port)/anything never completes in reasonable time
/// ```
public final class DripServer: Sendable {
    public let port: Int
    private let listener: Int32
    private let stopped = Atomic<Bool>(false)

    /// - Parameters:
    ///   - bytesPerSecond: how fast the body trickles out (at least one byte per tick).
    ///   - declaredLength: the Content-Length announced.
    public init(bytesPerSecond: Int = 2, declaredLength: Int = 1 << 20) throws {
        let (fd, bound) = try FreePort.listening()
        port = Int(bound)
        listener = fd
        Thread.detachNewThread { [self] in
            // The listener is closed here, when accept has returned for good: closed in stop(), its
            // number could be reused by another test's socket before this thread calls accept again.
            defer { close(fd) }
            while !stopped.load(ordering: .relaxed) {
                let client = accept(fd, nil, nil)
                guard client >= 0 else { return }
                Thread.detachNewThread { [self] in
                    defer { close(client) }
                    var buffer = [UInt8](repeating: 0, count: 4096)
                    _ = read(client, &buffer, buffer.count)
                    let head = Array(
                        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: \(declaredLength)\r\n\r\n"
                            .utf8)
                    // MSG_NOSIGNAL: a client that gave up must not end the test process with SIGPIPE.
                    guard send(client, head, head.count, Int32(MSG_NOSIGNAL)) == head.count else { return }
                    let step = max(1, bytesPerSecond / 10)
                    var sent = 0
                    while sent < declaredLength && !stopped.load(ordering: .relaxed) {
                        let piece = [UInt8](repeating: UInt8(ascii: " "), count: step)
                        guard send(client, piece, piece.count, Int32(MSG_NOSIGNAL)) == piece.count else { return }
                        sent += step
                        usleep(100_000)
                    }
                }
            }
        }
    }

    /// Stops accepting and ends every drip.
    public func stop() {
        stopped.store(true, ordering: .relaxed)
        shutdown(listener, Int32(SHUT_RDWR))  // wakes accept, which then returns and closes it
    }

}
