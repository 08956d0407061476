import BacklotHTTPClient
import BacklotHTTPServer
import Foundation
import Testing

/// The request target is percent-decoded, except that a path holding an encoded slash,
/// backslash or NUL ("%2F", "%5C", "%00", any case) is answered 400 before any handler sees it:
/// decoded, "%2F" would be a separator the router never saw, and a NUL would cut the path short
/// in libmicrohttpd's C string (`/catalog.json%00.pack` served as `/catalog.json`).
@Suite struct PercentDecodingTests {
    @Test func encodedSeparatorsAre400AndEverythingElseIsDecoded() throws {
        let server = try HTTPServer(configuration: .init(port: 0)) { request in
            .respond(HTTPResponse(status: 200, body: .bytes(Array(request.path.utf8))))
        }
        defer { server.stop(grace: 0) }
        let base = "http://127.0.0.1:\(server.port)"
        for (target, seen) in [("/caf%C3%A9%20x", "/café x"), ("/%41%2e%62", "/A.b")] {
            let answer = try HTTPClient().send("GET", base + target).text
            #expect(answer == seen, "\(target) was seen as \(answer)")
        }
        for target in ["/v1/catalog.json%00.pack", "/v1/a%00/keys/signing.key", "/%41%2F%62", "/a%5cb", "/a%2f..%2fb"] {
            let answer = try HTTPClient().send("GET", base + target)
            #expect(
                answer.status == 400 && answer.text.contains("badPath"), "\(target): \(answer.status) \(answer.text)")
        }
    }
}
