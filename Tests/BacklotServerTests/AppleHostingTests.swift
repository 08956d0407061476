import BacklotBasics
import BacklotFormat
import BacklotJSON
import BacklotProtocol
import BacklotRepository
import BacklotTestSupport
import Foundation
import Testing

@testable import BacklotServer

/// An iOS team's `.aar` (built by ba-package) hosted on `backlot serve`: uploaded with its manifest,
/// checked, and published in Apple's download-manifest format with Range on the archive.
@Suite(.serialized) struct AppleHostingTests {
    @Test func anAppleArchiveIsUploadedCheckedAndPublishedAsAnAppleDownloadManifest() throws {
        let dir = try TemporaryDirectory("apple")
        defer { dir.remove() }
        let repository = try Repository(directory: RepositoryDirectory(path: dir.at("data")))
        let server = try HostingServer(repository: repository, configuration: .init(port: 0))
        defer { server.stop() }
        let admin = try String(contentsOfFile: repository.adminTokenPath, encoding: .utf8).trimmingCharacters(
            in: .whitespacesAndNewlines)
        func call(_ method: String, _ path: String, json: String? = nil, file: String? = nil) throws -> Curl.Result {
            var extra: [String] = []
            var headers = ["Authorization": "Bearer \(admin)"]
            if let json {
                extra += ["--data-binary", json]
                headers["Content-Type"] = "application/json"
            }
            if let file { extra += ["--upload-file", file] }
            return try Curl.run(server.baseURL + path.dropFirst(), method: method, headers: headers, extra: extra)
        }
        var g = SeededGenerator(seed: 4)
        let archive = AppleArchiveBuilder.archive(files: [
            ("Videos/Introduction.m4v", g.bytes(50_000)), ("Textures/a.png", g.bytes(3000)),
        ])
        try dir.write("Tutorial.aar", archive)
        let manifest =
            #"{"assetPackID":"Tutorial","downloadPolicy":{"essential":{"installationEventTypes":["firstInstallation"]}},"fileSelectors":[{"directory":"Videos"}],"platforms":["iOS","macOS"],"userInfo":{"level":1}}"#

        #expect(try call("POST", "/api/apps", json: #"{"id":"com.example.game"}"#).status == 201)
        #expect(try call("POST", "/api/apps/com.example.game/packs", json: #"{"id":"Tutorial"}"#).status == 201)
        let noManifest = try call(
            "POST", "/api/apps/com.example.game/packs/Tutorial/versions",
            json: "{\"size\":\(archive.count),\"format\":\"aar\"}")
        #expect(noManifest.status == 400)
        let wrongID = try call(
            "POST", "/api/apps/com.example.game/packs/Tutorial/versions",
            json:
                "{\"size\":\(archive.count),\"format\":\"aar\",\"manifest\":\(manifest.replacingOccurrences(of: "\"Tutorial\"", with: "\"Other\""))}"
        )
        #expect(wrongID.status == 400 && wrongID.text.contains("not Tutorial"))
        #expect(
            try call(
                "POST", "/api/apps/com.example.game/packs/Tutorial/versions",
                json: "{\"size\":\(archive.count),\"format\":\"aar\",\"manifest\":\(manifest)}"
            ).status == 201)
        #expect(
            try call(
                "PUT", "/api/apps/com.example.game/packs/Tutorial/versions/1/archive", file: dir.at("Tutorial.aar")
            ).status == 202)
        repository.uploads.waitForProcessing()
        #expect(try repository.uploads.version(app: "com.example.game", pack: "Tutorial", number: 1).state == .complete)

        // A file that is not an Apple Archive fails processing with the reason.
        try dir.write("fake.aar", Array("PK\u{3}\u{4}".utf8) + [UInt8](repeating: 1, count: 100))
        _ = try call(
            "POST", "/api/apps/com.example.game/packs/Tutorial/versions",
            json: "{\"size\":104,\"format\":\"aar\",\"manifest\":\(manifest)}")
        _ = try call("PUT", "/api/apps/com.example.game/packs/Tutorial/versions/2/archive", file: dir.at("fake.aar"))
        repository.uploads.waitForProcessing()
        let failed = try repository.uploads.version(app: "com.example.game", pack: "Tutorial", number: 2)
        #expect(failed.state == .failed && failed.reason?.contains("not an Apple Archive") == true)
        // Every entry is read: the install size is the files', and an archive cut short, or one
        // without what the manifest selects, fails naming the entry or the selector.
        let complete = try repository.uploads.version(app: "com.example.game", pack: "Tutorial", number: 1)
        #expect(complete.installSize == 53_000)
        for (number, bytes, phrase) in [
            (3, Array(archive.dropLast(10)), "entry \"Contents/Textures/a.png\": its data"),
            (
                4, AppleArchiveBuilder.archive(files: [("Textures/a.png", [1, 2, 3])]),
                "fileSelectors[0] (directory) names the folder \"Videos\""
            ),
        ] {
            try dir.write("bad-\(number).aar", bytes)
            _ = try call(
                "POST", "/api/apps/com.example.game/packs/Tutorial/versions",
                json: "{\"size\":\(bytes.count),\"format\":\"aar\",\"manifest\":\(manifest)}")
            _ = try call(
                "PUT", "/api/apps/com.example.game/packs/Tutorial/versions/\(number)/archive",
                file: dir.at("bad-\(number).aar"))
            repository.uploads.waitForProcessing()
            let v = try repository.uploads.version(app: "com.example.game", pack: "Tutorial", number: number)
            #expect(v.state == .failed && v.reason?.contains(phrase) == true, "\(v.reason ?? "no reason")")
        }

        #expect(
            try call(
                "POST", "/api/apps/com.example.game/releases",
                json: #"{"pack":"Tutorial","version":1,"channel":"internal"}"#
            ).status == 200)
        let manifestURL = server.baseURL + "v1/apple/com.example.game/internal/ios/manifest.json"
        let published = try Curl.run(manifestURL)
        #expect(published.status == 200)
        let root = try JSONReader(source: "manifest", allowsComments: false, allowsTrailingCommas: false).read(
            published.body
        ).root
        let entry = try #require(root["assetPacks"]?.arrayElements?.first)
        #expect(entry["id"]?.stringValue == "Tutorial")
        #expect(entry["version"]?.serialized() == "1")
        #expect(entry["downloadSize"]?.serialized() == String(archive.count))
        #expect(entry["host"]?.serialized() == #"{"thirdParty":{}}"#)
        #expect(entry["userInfo"]?.serialized() == #"{"level":1}"#)
        let url = try #require(entry["url"]?.stringValue)
        #expect(url == server.baseURL + "v1/apple/com.example.game/internal/ios/packs/Tutorial")
        let ranged = try Curl.run(url, headers: ["Range": "bytes=100-1099"])
        #expect(ranged.status == 206 && ranged.body == Array(archive[100...1099]))
        // Only the platforms the manifest lists carry the pack; the Backlot catalog does not list it.
        let tv = try JSONReader(source: "tv").read(
            try Curl.run(server.baseURL + "v1/apple/com.example.game/internal/tvos/manifest.json").body
        ).root
        #expect(tv["assetPacks"]?.arrayElements?.isEmpty == true)
        let catalog = try Curl.run(server.baseURL + "v1/apps/com.example.game/internal/catalog.json")
        let key = try PublicKeyFile.read(path: repository.directory.publicKeyPath)
        #expect(
            try Catalog.verify(
                catalog.body, trusting: [key], app: "com.example.game", channel: .internal, now: Date(), source: "c"
            ).packs.isEmpty)
    }
}
