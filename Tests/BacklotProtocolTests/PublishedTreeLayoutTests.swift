import BacklotFormat
import BacklotProtocol
import Testing

/// The published tree's layout as docs/protocol.md §1 gives it: every path built and parsed back,
/// and every near miss refused.
struct PublishedTreeLayoutTests {
    static let sha = String(repeating: "0123456789abcdef", count: 4)

    static let files: [(PublishedTreeLayout, String)] = [
        (.catalog(app: "com.example.game", channel: .production), "v1/apps/com.example.game/production/catalog.json"),
        (.pack(sha256: sha), "v1/packs/\(sha).pack"),
        (.delta(sha256: sha), "v1/deltas/\(sha).delta"),
        (.deltaList(packDigest: sha), "v1/deltas/\(sha).json"),
        (.currentKeyList, "v1/keys/root.json"),
        (.keyList(version: 12), "v1/keys/root-12.json"),
        (
            .appleManifest(app: "com.example.game", channel: .internal, platform: .iOS),
            "v1/apple/com.example.game/internal/ios/manifest.json"
        ),
        (
            .applePack(app: "com.example.game", channel: .external, platform: .visionOS, pack: "Level1"),
            "v1/apple/com.example.game/external/visionos/packs/Level1"
        ),
    ]

    @Test func everyFileIsBuiltAsTheProtocolSaysAndParsesBack() {
        for (file, path) in Self.files {
            #expect(file.path == path)
            #expect(PublishedTreeLayout(path: path) == file)
            #expect(PublishedTreeLayout(path: "/" + path) == file, "a request's path, with its leading slash")
            let request = "//" + path
            #expect(PublishedTreeLayout(path: request.drop(while: { $0 == "/" })) == file, "a part of a longer string")
        }
    }

    @Test func folders() {
        #expect(PublishedTreeLayout.packsFolder == "v1/packs")
        #expect(PublishedTreeLayout.deltasFolder == "v1/deltas")
        #expect(PublishedTreeLayout.keysFolder == "v1/keys")
        #expect(PublishedTreeLayout.catalogFolder(app: "a.b", channel: .internal) == "v1/apps/a.b/internal")
        #expect(
            PublishedTreeLayout.applePacksFolder(app: "a.b", channel: .production, platform: .tvOS)
                == "v1/apple/a.b/production/tvos/packs")
    }

    @Test(arguments: [
        "", "/", "v1", "v2/packs/\(sha).pack", "v1/packs/\(sha.uppercased()).pack", "v1/packs/\(sha.dropLast()).pack",
        "v1/packs/\(sha)0.pack", "v1/packs/\(sha).pack/", "v1//packs/\(sha).pack", "//v1/packs/\(sha).pack",
        "v1/packs/../packs/\(sha).pack", "v1/./packs/\(sha).pack", "v1/apps/a.b/beta/catalog.json",
        "v1/apps/a.b/production/catalog.json/x", "v1/apps/./production/catalog.json",
        "v1/apps/../production/catalog.json",
        "v1/keys/root-0.json", "v1/keys/root-01.json", "v1/keys/root--1.json", "v1/keys/root-99999999999999999999.json",
        "v1/keys/root-+1.json", "v1/keys/root-.json", "v1/keys/root-1.json.json", "v1/keys/root-\u{661}.json",
        "v1/apple/a.b/production/ios/packs/x/y/z/w", "/v1/packs/\(sha).pack\u{0}",
        "v1/keys/root.json.bak", "v1/apple/a.b/production/iOS/manifest.json",
        "v1/apple/a.b/production/android/manifest.json",
        "v1/apple/a.b/production/ios/packs", "v1/apple/a.b/production/ios/packs/x/y", "v1/deltas/\(sha).pack",
        // The Kelvin sign (U+212A) is canonically a K: Swift's == would take it for one.
        "v1/pac\u{212A}s/\(sha).pack", "v1/apps/a.b/production/catalog.jso\u{6E}\u{301}",
        "v1/packs/\(sha).pac\u{212A}",
    ])
    func nearMissesAreNoFileOfTheTree(_ path: String) {
        #expect(PublishedTreeLayout(path: path) == nil, "\(path)")
    }

    @Test func catalogsNameOtherFilesRelativeToThemselves() {
        for (file, path) in Self.files {
            let reference = file.referenceFromCatalog
            #expect(reference == "../../../" + path.dropFirst(3))
            #expect(PublishedTreeLayout(referenceFromCatalog: reference) == file)
        }
        #expect(PublishedTreeLayout.pack(sha256: Self.sha).referenceFromCatalog == "../../../packs/\(Self.sha).pack")
    }

    @Test(arguments: [
        "../../packs/\(sha).pack", "../../../../v1/packs/\(sha).pack", "../../..//packs/\(sha).pack",
        "/v1/packs/\(sha).pack", "v1/packs/\(sha).pack", "https://evil.example/v1/packs/\(sha).pack",
        "../../../deltas/\(sha.uppercased()).delta", "../../../deltas/../packs/\(sha).pack", "../../../deltas/x.delta",
        "..%2f..%2f..%2fdeltas/\(sha).delta",
    ])
    func aReferenceInAnyOtherFormIsRefused(_ reference: String) {
        #expect(PublishedTreeLayout(referenceFromCatalog: reference) == nil, "\(reference)")
    }

    @Test func contentAddresses() {
        #expect(PublishedTreeLayout.pack(sha256: Self.sha).contentAddress == Self.sha)
        #expect(PublishedTreeLayout.delta(sha256: Self.sha).contentAddress == Self.sha)
        #expect(PublishedTreeLayout.deltaList(packDigest: Self.sha).contentAddress == nil)
        #expect(PublishedTreeLayout.currentKeyList.contentAddress == nil)
    }
}
