import BacklotHTTPClient
import BacklotHTTPServer
import Foundation
import Testing

/// The request target is percent-decoded except for "%00": a NUL decoded into libmicrohttpd's C
/// string would cut the path short, and `/catalog.json%00.pack` would be served as `/catalog.json`.
@Suite struct PercentDecodingTests {
    @Test func anEncodedNulStaysInThePathAndEverythingElseIsDecoded() throws {
        let server = try HTTPServer(configuration: .init(port: 0)) { request in
            .respond(HTTPResponse(status: 200, body: .bytes(Array(request.path.utf8))))
        }
        defer { server.stop(grace: 0) }
        let base = "http://127.0.0.1:\(server.port)"
        for (target, seen) in [
            ("/v1/catalog.json%00.pack", "/v1/catalog.json%00.pack"),
            ("/v1/a%00/keys/signing.key", "/v1/a%00/keys/signing.key"),
            ("/caf%C3%A9%20x", "/café x"), ("/%41%2F%62", "/A/b"),
        ] {
            let answer = try HTTPClient().send("GET", base + target).text
            #expect(answer == seen, "\(target) was seen as \(answer)")
        }
    }
}
