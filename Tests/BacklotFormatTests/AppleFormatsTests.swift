import BacklotBasics
import BacklotJSON
import BacklotTestSupport
import Testing

@testable import BacklotFormat

struct AppleFormatsTests {
    @Test func plainAndCompressedApppleArchiveHeadersAreRecognised() throws {
        let plain = AppleArchiveBuilder.archive(files: [("a.txt", Array("hello".utf8))])
        guard
            case .plain(let length) = try AppleArchiveHeader.check(
                plain, fileSize: UInt64(plain.count), source: "a.aar")
        else {
            Issue.record("not plain")
            return
        }
        #expect(length > 6)
        var compressed = Array("pbzz".utf8)
        compressed += [0, 0, 0, 0, 0, 0x40, 0, 0]  // block size 4 MiB (big-endian)
        compressed += [0, 0, 0, 0, 0, 0, 0x10, 0]  // raw size 4096
        compressed += [0, 0, 0, 0, 0, 0, 0, 10]  // compressed size 10
        compressed += [0x78, 0x5E] + [UInt8](repeating: 0, count: 8)
        #expect(
            try AppleArchiveHeader.check(compressed, fileSize: UInt64(compressed.count), source: "z.aar")
                == .compressed(algorithm: "z", blockSize: 4 << 20))
    }

    @Test(arguments: [
        ("PK\u{3}\u{4}zipzip", "neither AA01 nor pbz"),
        ("pbzq\0\0\0\0\0\0\0\0", "not a known compression"),
        ("AA01\u{2}\0", "impossible"),
        ("AA", "the file has 2 bytes"),
    ])
    func badHeadersAreRefusedWithAReason(text: String, phrase: String) {
        let bytes = Array(text.utf8)
        #expect { try AppleArchiveHeader.check(bytes, fileSize: UInt64(bytes.count), source: "x.aar") } throws: {
            ($0 as? BacklotError)?.message.contains(phrase) == true
        }
    }

    @Test func downloadManifestsJoinURLsWithOneSlashAndRoundTrip() throws {
        #expect(
            AppleDownloadManifest.packURL(base: "https://cdn.example.com/packs", id: "tutorial")
                == "https://cdn.example.com/packs/tutorial")
        #expect(
            AppleDownloadManifest.packURL(base: "https://cdn.example.com/packs/", id: "tutorial")
                == "https://cdn.example.com/packs/tutorial")
        var m = AppleDownloadManifest()
        m.set(
            .init(
                id: "tutorial", baseURL: "https://cdn.example.com", version: 0, downloadSize: 596,
                downloadPolicy: .onDemand, userInfo: nil))
        m.set(
            .init(
                id: "terrain", baseURL: "https://cdn.example.com", version: 3, downloadSize: 10_000_000_000,
                downloadPolicy: .prefetch(installationEventTypes: [.firstInstallation]),
                userInfo: JSONNode(.object([JSONMember(key: "regionID", value: .string("us"))]))))
        let text = m.encoded
        let strict = try JSONReader(source: "m", allowsComments: false, allowsTrailingCommas: false).read(text).root
        let first = try #require(strict["assetPacks"]?.arrayElements?.first)
        #expect(first["host"]?.serialized() == #"{"thirdParty":{}}"#)
        #expect(first["downloadPolicy"]?.serialized() == #"{"onDemand":{}}"#)
        #expect(try AppleDownloadManifest.decode(Array(text.utf8), source: "m") == m)
    }
}
