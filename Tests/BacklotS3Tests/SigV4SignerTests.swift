import BacklotCrypto
import BacklotS3
import Foundation
import Testing

/// The signer against AWS's published vectors: the Signature Version 4 test suite (service
/// `service`, 2015-08-30T12:36:00Z) and the S3 examples of "Examples: Signature Calculations"
/// (bucket `examplebucket`, 2013-05-24). Each case asserts the whole `Authorization` header, and
/// where AWS publishes them the canonical request's hash and the string to sign, so a failure
/// says which step is wrong.
@Suite struct SigV4SignerTests {
    static let suiteCredentials = S3Credentials(
        accessKeyID: "AKIDEXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
    static let suiteSigner = SigV4Signer(
        credentials: suiteCredentials, region: "us-east-1", service: "service", addsPayloadHashHeader: false)
    static let suiteDate = Date(timeIntervalSince1970: 1_440_938_160)  // 2015-08-30T12:36:00Z
    static let suiteScope = "AKIDEXAMPLE/20150830/us-east-1/service/aws4_request"

    static let s3Credentials = S3Credentials(
        accessKeyID: "AKIAIOSFODNN7EXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
    static let s3Signer = SigV4Signer(credentials: s3Credentials, region: "us-east-1")
    static let s3Date = Date(timeIntervalSince1970: 1_369_353_600)  // 2013-05-24T00:00:00Z
    static let s3Host = ("Host", "examplebucket.s3.amazonaws.com")

    func suite(
        _ method: String = "GET", path: String = "/", query: [(String, String)] = [], headers: [(String, String)] = [],
        body: String = ""
    ) -> SigV4Signer.Signed {
        let hash = SHA256.hash(Array(body.utf8)).hex
        return Self.suiteSigner.sign(
            .init(
                method: method, path: path, query: query, headers: [("Host", "example.amazonaws.com")] + headers,
                payloadHash: hash),
            at: Self.suiteDate)
    }

    func authorization(_ signedHeaders: String, _ signature: String) -> String {
        "AWS4-HMAC-SHA256 Credential=\(Self.suiteScope), SignedHeaders=\(signedHeaders), Signature=\(signature)"
    }

    @Test func getVanilla() {
        let s = suite()
        #expect(
            s.canonicalRequest
                == "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\n\(SigV4Signer.emptyPayloadHash)"
        )
        #expect(
            SHA256.hash(Array(s.canonicalRequest.utf8)).hex
                == "bb579772317eb040ac9ed261061d46c1f17a8133879d6129b6e1c25292927e63")
        #expect(
            s.stringToSign
                == "AWS4-HMAC-SHA256\n20150830T123600Z\n20150830/us-east-1/service/aws4_request\nbb579772317eb040ac9ed261061d46c1f17a8133879d6129b6e1c25292927e63"
        )
        #expect(
            s.authorization
                == authorization("host;x-amz-date", "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"))
    }

    @Test func getVanillaQueryOrderKeyCase() {
        let s = suite(query: [("Param2", "value2"), ("Param1", "value1")])
        #expect(s.query == "Param1=value1&Param2=value2")
        #expect(
            SHA256.hash(Array(s.canonicalRequest.utf8)).hex
                == "816cd5b414d056048ba4f7c5386d6e0533120fb1fcfa93762cf0fc39e2cf19e0")
        #expect(
            s.authorization
                == authorization("host;x-amz-date", "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"))
    }

    @Test func getVanillaQueryOrderValue() {
        let s = suite(query: [("Param1", "value2"), ("Param1", "value1")])
        #expect(s.query == "Param1=value1&Param1=value2")
        #expect(
            s.authorization
                == authorization("host;x-amz-date", "5772eed61e12b33fae39ee5e7012498b51d56abc0abb7c60486157bd471c4694"))
    }

    @Test func getVanillaUTF8Query() {
        let s = suite(query: [("\u{1234}", "bar")])
        #expect(s.query == "%E1%88%B4=bar")
        #expect(
            s.authorization
                == authorization("host;x-amz-date", "2cdec8eed098649ff3a119c94853b13c643bcf08f8b0a1d91e12c9027818dd04"))
    }

    @Test func getUnreserved() {
        let path = SigV4Signer.encodePath("-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
        #expect(path == "/-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
        #expect(
            suite(path: path).authorization
                == authorization("host;x-amz-date", "07ef7494c76fa4850883e2b006601f940f8a34d404d0cfa977f52a65bbf5f24f"))
    }

    @Test func getSpaceAndUTF8PathsEncodeOnce() {
        #expect(SigV4Signer.encodePath("/example space/") == "/example%20space/")
        #expect(SigV4Signer.encodePath("/\u{1234}") == "/%E1%88%B4")
        #expect(SigV4Signer.encodePath("test$file.text") == "/test%24file.text")
        #expect(SigV4Signer.encodePath("a+b/c=d&e") == "/a%2Bb/c%3Dd%26e")
    }

    @Test func getHeaderValueTrim() {
        let s = suite(headers: [("My-Header1", " value1"), ("My-Header2", "\"a   b   c\"")])
        #expect(s.canonicalRequest.contains("my-header1:value1\nmy-header2:\"a b c\"\n"))
        #expect(
            s.authorization
                == authorization(
                    "host;my-header1;my-header2;x-amz-date",
                    "acc3ed3afb60bb290fc8d2dd0098b9911fcaa05412b367055dee359757a9c736"))
    }

    @Test func getHeaderKeyDuplicate() {
        let s = suite(headers: [("My-Header1", "value2"), ("My-Header1", "value2"), ("My-Header1", "value1")])
        #expect(s.canonicalRequest.contains("my-header1:value2,value2,value1\n"))
        #expect(
            s.authorization
                == authorization(
                    "host;my-header1;x-amz-date", "c9d5ea9f3f72853aea855b47ea873832890dbdd183b4468f858259531a5138ea"))
    }

    @Test func getHeaderValueOrder() {
        let s = suite(headers: [
            ("My-Header1", "value4"), ("My-Header1", "value1"), ("My-Header1", "value3"), ("My-Header1", "value2"),
        ])
        #expect(
            s.authorization
                == authorization(
                    "host;my-header1;x-amz-date", "08c7e5a9acfcfeb3ab6b2185e75ce8b1deb5e634ec47601a50643f830c755c01"))
    }

    @Test func postXWWWFormURLEncoded() {
        let s = suite("POST", headers: [("Content-Type", "application/x-www-form-urlencoded")], body: "Param1=value1")
        #expect(s.canonicalRequest.hasSuffix("\n9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e"))
        #expect(s.stringToSign.hasSuffix("\n42a5e5bb34198acb3e84da4f085bb7927f2bc277ca766e6d19c73c2154021281"))
        #expect(
            s.authorization
                == authorization(
                    "content-type;host;x-amz-date", "ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a"))
    }

    @Test func sessionTokenIsSentAndSigned() {
        let signer = SigV4Signer(
            credentials: S3Credentials(accessKeyID: "AKIDEXAMPLE", secretAccessKey: "secret", sessionToken: "TOKEN"),
            region: "us-east-1")
        let s = signer.sign(
            .init(method: "GET", path: "/", headers: [("Host", "h")], payloadHash: SigV4Signer.emptyPayloadHash),
            at: Self.suiteDate)
        #expect(s.headers.contains { $0.0 == "x-amz-security-token" && $0.1 == "TOKEN" })
        #expect(s.authorization.contains("SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-security-token,"))
        #expect(s.canonicalRequest.contains("x-amz-security-token:TOKEN\n"))
    }

    // The S3 examples ("Examples: Signature Calculations", AWS S3 API reference).

    @Test func s3GetObjectWithRange() {
        let s = Self.s3Signer.sign(
            .init(
                method: "GET", path: "/test.txt", headers: [Self.s3Host, ("Range", "bytes=0-9")],
                payloadHash: SigV4Signer.emptyPayloadHash), at: Self.s3Date)
        #expect(
            s.canonicalRequest == """
                GET
                /test.txt

                host:examplebucket.s3.amazonaws.com
                range:bytes=0-9
                x-amz-content-sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
                x-amz-date:20130524T000000Z

                host;range;x-amz-content-sha256;x-amz-date
                e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
                """)
        #expect(
            s.stringToSign
                == "AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/aws4_request\n7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972"
        )
        #expect(s.signature == "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")
    }

    @Test func s3PutObject() {
        let body = Array("Welcome to Amazon S3.".utf8)
        let hash = SHA256.hash(body).hex
        #expect(hash == "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072")
        let s = Self.s3Signer.sign(
            .init(
                method: "PUT", path: SigV4Signer.encodePath("test$file.text"),
                headers: [
                    Self.s3Host, ("Date", "Fri, 24 May 2013 00:00:00 GMT"),
                    ("x-amz-storage-class", "REDUCED_REDUNDANCY"),
                ],
                payloadHash: hash), at: Self.s3Date)
        #expect(
            s.authorization.contains("SignedHeaders=date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class,"))
        #expect(s.signature == "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd")
    }

    @Test func s3GetBucketLifecycleHasAnExplicitEmptyValue() {
        let s = Self.s3Signer.sign(
            .init(
                method: "GET", path: "/", query: [("lifecycle", "")], headers: [Self.s3Host],
                payloadHash: SigV4Signer.emptyPayloadHash), at: Self.s3Date)
        #expect(s.query == "lifecycle=")
        #expect(s.signature == "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543")
    }

    @Test func s3ListObjectsSortsTheQuery() {
        let s = Self.s3Signer.sign(
            .init(
                method: "GET", path: "/", query: [("prefix", "J"), ("max-keys", "2")], headers: [Self.s3Host],
                payloadHash: SigV4Signer.emptyPayloadHash), at: Self.s3Date)
        #expect(s.query == "max-keys=2&prefix=J")
        #expect(s.signature == "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7")
    }

    @Test func canonicalQueryEncodesEverythingButUnreserved() {
        #expect(
            SigV4Signer.canonicalQuery([("prefix", "packs/a b+c"), ("uploads", ""), ("list-type", "2")])
                == "list-type=2&prefix=packs%2Fa%20b%2Bc&uploads=")
    }

    @Test func hmacMatchesRFC4231() {
        // RFC 4231 test case 2.
        let mac = HMACSHA256.authenticate(Array("what do ya want for nothing?".utf8), key: Array("Jefe".utf8))
        #expect(
            mac.map { String(format: "%02x", $0) }.joined()
                == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }
}
