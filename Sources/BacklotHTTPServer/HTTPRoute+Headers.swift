/// Headers every answer of a group of routes carries (the management API's `Cache-Control:
/// no-store`, say), whichever way the route answers.
///
/// ```swift
/// return api.route(request)?.addingHeaders([("Cache-Control", "no-store")])
/// ```
extension HTTPRoute {
    /// This route with `headers` added to its answer: the immediate one, the one after a buffered
    /// body, or the one a receiver gives when the body has arrived. (An error a receiver throws
    /// mid-body is answered by the server as it is.)
    public func addingHeaders(_ headers: [(name: String, value: String)]) -> HTTPRoute {
        switch self {
        case .respond(var response):
            response.headers += headers
            return .respond(response)
        case .buffer(let limit, let then):
            return .buffer(limit: limit) { body in
                var response = then(body)
                response.headers += headers
                return response
            }
        case .receive(let receiver):
            return .receive(HeaderAddingReceiver(receiver, headers: headers))
        }
    }
}

/// A receiver whose final answer gets more headers.
final class HeaderAddingReceiver: HTTPBodyReceiver {
    let inner: any HTTPBodyReceiver
    let headers: [(name: String, value: String)]

    init(_ inner: any HTTPBodyReceiver, headers: [(name: String, value: String)]) {
        self.inner = inner
        self.headers = headers
    }

    func receive(_ bytes: UnsafeRawBufferPointer) throws { try inner.receive(bytes) }

    func finish() -> HTTPResponse {
        var response = inner.finish()
        response.headers += headers
        return response
    }

    func abort() { inner.abort() }
}
