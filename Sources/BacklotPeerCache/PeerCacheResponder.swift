import BacklotBasics
import BacklotClient
import BacklotHTTPServer
import BacklotProtocol
import Synchronization

/// Answers a peer cache's requests (``BacklotProtocol/PeerCacheLayout``) from a container's
/// installed chunks; any other request is a 404 (405 for another method on a known path).
final class PeerCacheResponder: Sendable {
    let chunks: InstalledChunks
    let budget: SendBudget
    let isAllowed: @Sendable () -> Bool
    let counters = Mutex(PeerCacheServer.Statistics())

    init(chunks: InstalledChunks, budget: SendBudget, isAllowed: @escaping @Sendable () -> Bool) {
        self.chunks = chunks
        self.budget = budget
        self.isAllowed = isAllowed
    }

    /// What the peer cache says while the device may not serve (battery, metered network).
    static let paused = HTTPResponse(
        status: 503, headers: [("Retry-After", "300"), ("Cache-Control", "no-store")], route: "peer")

    @Sendable func route(_ request: HTTPRequest) -> HTTPRoute {
        if request.path == PeerCacheLayout.havePath {
            guard request.method == "POST" else { return .respond(Self.methodNotAllowed("POST")) }
            return .buffer(limit: PeerCacheLayout.maximumHaveQuery * 32) { [self] body in have(body) }
        }
        if let id = PeerCacheLayout.chunkID(path: request.path) {
            guard request.method == "GET" else { return .respond(Self.methodNotAllowed("GET")) }
            guard isAllowed() else { return .respond(refused(Self.paused)) }
            let notHeld = HTTPResponse(status: 404, headers: [("Cache-Control", "no-store")], route: "peer")
            guard let size = chunks.size(of: id) else {
                counters.withLock { $0.notHeld += 1 }
                return .respond(notHeld)
            }
            // The budget is taken before the chunk is read and hashed: what a neighbour can make
            // this device read is bounded by the rate too, not only what it is sent.
            guard budget.take(size) else {
                return .respond(
                    refused(
                        HTTPResponse(
                            status: 503, headers: [("Retry-After", "\(budget.secondsUntil(size))")], route: "peer")))
            }
            guard let bytes = chunks.bytes(of: id) else {
                budget.refund(size)
                counters.withLock { $0.notHeld += 1 }
                return .respond(notHeld)
            }
            counters.withLock {
                $0.chunksSent += 1
                $0.bytesSent += UInt64(bytes.count)
            }
            return .respond(
                HTTPResponse(
                    status: 200,
                    headers: [("Content-Type", "application/octet-stream"), ("Cache-Control", "no-store")],
                    body: .bytes(bytes), route: "peer"))
        }
        return .respond(HTTPResponse(status: 404, route: "peer"))
    }

    /// The answer to a `have` question: one bit per chunk ID asked.
    func have(_ body: [UInt8]) -> HTTPResponse {
        guard isAllowed() else { return refused(Self.paused) }
        guard let ids = PeerCacheLayout.haveIDs(body) else {
            return HTTPResponse.error(
                400, code: .invalidInput,
                "the body must be 1 to \(PeerCacheLayout.maximumHaveQuery) chunk IDs of 32 bytes each", route: "peer")
        }
        counters.withLock { $0.questions += 1 }
        let bits = PeerCacheLayout.haveAnswer(count: ids.count) { chunks.holds(ids[$0]) }
        return HTTPResponse(
            status: 200, headers: [("Content-Type", "application/octet-stream"), ("Cache-Control", "no-store")],
            body: .bytes(bits), route: "peer")
    }

    func refused(_ response: HTTPResponse) -> HTTPResponse {
        counters.withLock { $0.refused += 1 }
        return response
    }

    static func methodNotAllowed(_ allowed: String) -> HTTPResponse {
        HTTPResponse(status: 405, headers: [("Allow", allowed)], route: "peer")
    }
}
