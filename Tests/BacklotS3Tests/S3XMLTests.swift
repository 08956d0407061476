import BacklotBasics
import Foundation
import Testing

@testable import BacklotS3

/// The XML reader treats the object store's answers as hostile.
@Suite struct S3XMLTests {
    func parse(_ text: String) throws -> S3XMLElement { try S3XML.parse(Array(text.utf8)) }

    @Test func readsAnErrorWithEntitiesAndANamespace() throws {
        let root = try parse(
            """
            <?xml version="1.0" encoding="UTF-8"?>
            <!-- a comment -->
            <s3:Error xmlns:s3="http://s3.amazonaws.com/doc/2006-03-01/"><Code>NoSuchKey</Code>
            <Message>no &quot;a&amp;b&quot; &#x263A; &#65;</Message><Key><![CDATA[x<y]]></Key><Empty/></s3:Error>
            """)
        #expect(root.name == "Error")
        #expect(root.value("Code") == "NoSuchKey")
        #expect(root.value("Message") == "no \"a&b\" \u{263A} A")
        #expect(root.value("Key") == "x<y")
        #expect(root.value("Empty") == "")
    }

    @Test func readsAListingInOrder() throws {
        let root = try parse(
            "<ListBucketResult><Contents><Key>a</Key><Size>1</Size></Contents><Contents><Key>b</Key><Size>22</Size></Contents><IsTruncated>false</IsTruncated></ListBucketResult>"
        )
        #expect(root.children(named: "Contents").map { $0.value("Key") } == ["a", "b"])
        #expect(root.value("IsTruncated") == "false")
    }

    @Test(arguments: [
        "<!DOCTYPE x [<!ENTITY a \"aaaa\">]><Error>&a;</Error>",  // entity expansion is never done
        "<Error>&unknown;</Error>",
        "<Error><Code>x</Error>",
        "<Error><Code>x</Code>",
        "<Error></Error><Error></Error>",
        "text",
        "",
        "<Error>&#0;</Error>",
        "<Error>&#x110000;</Error>",
        "<Error a=\"unclosed></Error>",
    ])
    func refusesWhatIsNotWellFormed(_ text: String) {
        #expect(throws: BacklotError.self) { try parse(text) }
    }

    @Test func boundsTheNesting() throws {
        let deep = String(repeating: "<a>", count: 1000) + String(repeating: "</a>", count: 1000)
        let e = #expect(throws: BacklotError.self) { try parse(deep) }
        #expect(e?.message.contains("nested deeper than") == true)
        let fine = String(repeating: "<a>", count: 20) + String(repeating: "</a>", count: 20)
        #expect(try parse(fine).name == "a")
    }

    @Test func aLongRunOfGarbageIsLinear() throws {
        // A megabyte of self-closing elements: accepted, each element counted.
        let many = "<r>" + String(repeating: "<e/>", count: 250_000) + "</r>"
        #expect(try parse(many).children.count == 250_000)
    }
}

/// Endpoint parsing, addressing, and the pieces of the error messages that need no server.
@Suite struct S3ConfigurationTests {
    @Test func parsesEndpoints() throws {
        let c = try S3Configuration(endpoint: "http://127.0.0.1:7480/")
        #expect(c.endpoint == "http://127.0.0.1:7480")
        #expect(c.region == "us-east-1")
        #expect(c.usesPathStyle(for: "packs"))  // an IP address cannot carry a bucket label
        let aws = try S3Configuration(endpoint: "https://s3.eu-west-1.amazonaws.com:443", region: "eu-west-1")
        #expect(aws.hostHeader == "s3.eu-west-1.amazonaws.com")
        #expect(!aws.usesPathStyle(for: "packs"))
        #expect(aws.usesPathStyle(for: "my.dotted.bucket"))
        let client = S3Client(configuration: aws, credentials: S3Credentials(accessKeyID: "a", secretAccessKey: "b"))
        #expect(client.address(bucket: "packs", key: "a b/c").url == "https://packs.s3.eu-west-1.amazonaws.com/a%20b/c")
        var path = aws
        path.pathStyle = true
        #expect(
            S3Client(configuration: path, credentials: client.credentials).address(bucket: "packs", key: "k").url
                == "https://s3.eu-west-1.amazonaws.com/packs/k")
    }

    @Test(arguments: [
        "127.0.0.1:7480", "ftp://host", "http://", "http://host:0", "http://host:70000", "http://host/path",
        "http://user@host", "http://host:x",
    ])
    func refusesBadEndpoints(_ endpoint: String) {
        let e = #expect(throws: BacklotError.self) { try S3Configuration(endpoint: endpoint) }
        #expect(e?.code == .usage)
        #expect(e?.message.contains(endpoint) == true)
    }

    @Test func credentialsComeFromTheEnvironment() throws {
        let c = try S3Credentials.fromEnvironment([
            "AWS_ACCESS_KEY_ID": "id", "AWS_SECRET_ACCESS_KEY": "secret", "AWS_SESSION_TOKEN": "t",
        ])
        #expect(c.sessionToken == "t")
        #expect(!c.description.contains("secret"))
        let e = #expect(throws: BacklotError.self) { try S3Credentials.fromEnvironment(["AWS_ACCESS_KEY_ID": "id"]) }
        #expect(e?.message.contains("AWS_SECRET_ACCESS_KEY") == true)
    }

    @Test func describesAClockSkew() throws {
        let client = S3Client(
            configuration: try S3Configuration(endpoint: "http://127.0.0.1:1"),
            credentials: S3Credentials(accessKeyID: "a", secretAccessKey: "b"))
        let server = try #require(S3Client.parseHTTPDate("Tue, 01 Dec 2026 14:13:41 GMT"))
        #expect(S3Client.parseHTTPDate("Tue, 1 Dec 2026 14:13:41 GMT") == nil)
        let ahead = client.skewDescription(
            signedAt: Date(timeIntervalSince1970: server + 1203), serverDate: "Tue, 01 Dec 2026 14:13:41 GMT")
        #expect(ahead.contains("about 20 minutes ahead of the server's"))
        let behind = client.skewDescription(
            signedAt: Date(timeIntervalSince1970: server - 3 * 3600), serverDate: "Tue, 01 Dec 2026 14:13:41 GMT")
        #expect(behind.contains("about 3 hours behind"))
    }

    @Test func backoffGrowsAndIsCapped() {
        let p = S3RetryPolicy(maximumAttempts: 10, initialDelay: .milliseconds(100), maximumDelay: .seconds(1))
        #expect(p.delay(after: 1) <= .milliseconds(100))
        #expect(p.delay(after: 1) >= .milliseconds(50))
        #expect(p.delay(after: 3) >= .milliseconds(200))
        #expect(p.delay(after: 20) <= .seconds(1))
    }

    @Test func etagsLoseTheirQuotesForConditionalPuts() {
        #expect(S3Client.unquoted("\"abc\"") == "abc")
        #expect(S3Client.unquoted("W/\"abc\"") == "abc")
        #expect(S3Client.unquoted("abc") == "abc")
    }
}
