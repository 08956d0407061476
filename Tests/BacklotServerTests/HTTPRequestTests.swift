import BacklotHTTPServer
import Testing

/// A request's header fields, found by name without regard to ASCII case (RFC 9110 §5.1).
@Suite struct HTTPRequestTests {
    @Test func headerNamesAreFoundWhateverTheirCase() {
        let long = "x-a-field-name-longer-than-fifteen-bytes"
        let request = HTTPRequest(method: "GET", path: "/", headers: ["if-none-match": "\"a\"", long: "1", "ä": "2"])
        for name in ["if-none-match", "If-None-Match", "IF-NONE-MATCH", "iF-nOnE-mAtCh"] {
            #expect(request.header(name) == "\"a\"", "\(name)")
        }
        #expect(request.header(long.uppercased()) == "1" && request.header(long) == "1")
        #expect(request.header("ä") == "2" && request.header("Ä") == nil)  // only ASCII letters fold
        #expect(request.header("If-Match") == nil)
    }
}
