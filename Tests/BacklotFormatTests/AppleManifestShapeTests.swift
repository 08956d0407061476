import BacklotBasics
import BacklotTestSupport
import Foundation
import Testing

@testable import BacklotFormat

/// The manifest shapes real projects and Apple's tools write (shared/reference/apple-manifest-shapes.md,
/// section 1a), each with its verdict: accepted, accepted with a warning, or refused by a named rule.
struct AppleManifestShapeTests {
    enum Verdict: Sendable {
        case accept
        case warn(String)
        case refuse(String)
    }

    struct Shape: Sendable, CustomTestStringConvertible {
        let name: String
        let json: String
        let verdict: Verdict
        var testDescription: String { name }
    }

    static let shapes: [Shape] = [
        Shape(
            name: "M1 Apple doc example (trailing comma before a comment, filled platforms)",
            json: """
                {
                    "assetPackID": "Tutorial",
                    "downloadPolicy": {
                        "essential": {
                            "installationEventTypes": ["firstInstallation"]
                        }
                    },
                    "fileSelectors": [
                        {
                            "file": "Videos/Introduction.m4v"
                        },
                        // …
                    ],
                    "platforms": [
                        /* … */ "iOS"
                    ]
                }
                """, verdict: .warn("json.trailingComma")),
        Shape(
            name: "M1 Apple doc example as printed (platforms holds only a comment)",
            json: """
                {"assetPackID": "Tutorial", "downloadPolicy": {"essential": {"installationEventTypes": ["firstInstallation"]}},
                 "fileSelectors": [{"file": "Videos/Introduction.m4v"}], "platforms": [ /* … */ ]}
                """, verdict: .refuse("platforms.empty")),
        Shape(
            name: "M3 WWDC26 localized pack: comment before the root, 3-space indent",
            json: """
                // Asset pack manifest
                {
                   "assetPackID": "voice-english",
                   "downloadPolicy": { "onDemand": {} },
                   "language": "en-US",
                   "sourceRoot": ".",
                   "fileSelectors": [ { "directory": "Voice" } ],
                   "platforms": [ "iOS" ] //…
                }
                """, verdict: .accept),
        Shape(
            name: "M4 Solar2D onDemand, tabs",
            json:
                "{\n\t\"assetPackID\":\"demoondemand\",\"downloadPolicy\":{\"onDemand\":{}},\"fileSelectors\":[{\"file\":\"demoondemand/image.png\"}],\"platforms\":[\"iOS\"]\n}\n",
            verdict: .accept),
        Shape(
            name: "M5 prefetch with both events",
            json: """
                {"assetPackID":"demoprefetch","downloadPolicy":{"prefetch":{"installationEventTypes":["firstInstallation","subsequentUpdate"]}},
                "fileSelectors":[{"file":"a.png"},{"file":"b.png"},{"file":"c.png"}],"platforms":["iOS"]}
                """, verdict: .accept),
        Shape(
            name: "M6 essential without installationEventTypes",
            json: """
                {"assetPackID":"emuessential","downloadPolicy":{"essential":{}},"fileSelectors":[{"file":"a"}],"platforms":["iOS"]}
                """, verdict: .refuse("downloadPolicy.eventTypesRequired")),
        Shape(
            name: "M6 prefetch without installationEventTypes",
            json: """
                {"assetPackID":"emuprefetch","downloadPolicy":{"prefetch":{}},"fileSelectors":[{"file":"a"}],"platforms":["iOS"]}
                """, verdict: .refuse("downloadPolicy.eventTypesRequired")),
        Shape(
            name: "M7 bare language subtag, alphabetical keys",
            json: """
                {"assetPackID":"emufrench","downloadPolicy":{"onDemand":{}},"fileSelectors":[{"file":"fr.txt"}],"language":"fr","platforms":["iOS"]}
                """, verdict: .accept),
        Shape(
            name: "M8 directory with an extension, inline arrays",
            json: """
                {
                \t"assetPackID": "sam3d-body-pose",
                \t"downloadPolicy": {"prefetch": {"installationEventTypes": ["firstInstallation", "subsequentUpdate"]}},
                \t"fileSelectors": [{ "directory": "SAM3DBodyPose.mlmodelc" }],
                \t"platforms": ["iOS"]
                }
                """, verdict: .accept),
        Shape(
            name: "M9 fileSource/fileDestination, sourceRoot climbing two parents, last",
            json: """
                {
                \t"assetPackID": "model",
                \t"downloadPolicy": {"essential": {"installationEventTypes": ["firstInstallation"]}},
                \t"fileSelectors": [{"fileSource": "build/model.bin", "fileDestination": "Models/model.bin"}],
                \t"platforms": ["iOS"],
                \t"sourceRoot": "../.."
                }
                """, verdict: .accept),
        Shape(
            name: "M10 directorySource/directoryDestination, macOS, dotted ID",
            json: """
                {"assetPackID":"dev.hazakura.coreai.model","downloadPolicy":{"onDemand":{}},
                 "fileSelectors":[{"directorySource":"CoreAIModels/m1","directoryDestination":"CoreAIModels/m1"}],
                 "platforms":["macOS"],"sourceRoot":"../stage"}
                """, verdict: .warn("assetPackID.appStoreConnect")),
        Shape(
            name: "M11 Go generator: empty language",
            json: """
                {"assetPackID":"stickers","downloadPolicy":{"onDemand":{}},"fileSelectors":[{"fileSource":"a.png","fileDestination":"b.png"}],"language":"","platforms":["iOS"],"sourceRoot":"../.."}
                """, verdict: .warn("language.empty")),
        Shape(
            name: "M12 Swift JSONEncoder: space before colon, escaped slashes, userInfo",
            json: """
                {
                  "assetPackID" : "terrain-us",
                  "downloadPolicy" : {
                    "prefetch" : {
                      "installationEventTypes" : [
                        "firstInstallation"
                      ]
                    }
                  },
                  "fileSelectors" : [
                    {
                      "file" : "Terrain\\/us.bin"
                    }
                  ],
                  "platforms" : [
                    "iOS"
                  ],
                  "userInfo" : {
                    "payloadSHA256" : "abc",
                    "regionID" : "us"
                  }
                }
                """, verdict: .accept),
        Shape(
            name: "M13 bash heredoc",
            json: """
                {
                  "assetPackID": "regions-NL",
                  "downloadPolicy": { "onDemand": {} },
                  "fileSelectors": [ { "file": "nl.mbtiles" },{ "file": "nl.json" } ],
                  "platforms": [ "iOS", "macOS" ]
                }
                """, verdict: .accept),
        Shape(
            name: "M16 one-space indent",
            json:
                "{\n \"assetPackID\": \"pkba\",\n \"downloadPolicy\": {\n  \"onDemand\": {}\n },\n \"fileSelectors\": [\n  {\n   \"directory\": \"pkba\"\n  }\n ],\n \"platforms\": [\n  \"iOS\"\n ]\n}",
            verdict: .accept),
        Shape(
            name: "M17 ID with a space",
            json:
                #"{"assetPackID":"foes c3","downloadPolicy":{"onDemand":{}},"fileSelectors":[{"file":"a"}],"platforms":["iOS"]}"#,
            verdict: .refuse("assetPackID.rule")),
        Shape(
            name: "M17 ID with a slash",
            json:
                #"{"assetPackID":"foes/c3","downloadPolicy":{"onDemand":{}},"fileSelectors":[{"file":"a"}],"platforms":["iOS"]}"#,
            verdict: .refuse("assetPackID.rule")),
        Shape(
            name: "M17 ID with a leading dot",
            json:
                #"{"assetPackID":".foes","downloadPolicy":{"onDemand":{}},"fileSelectors":[{"file":"a"}],"platforms":["iOS"]}"#,
            verdict: .refuse("assetPackID.rule")),
        Shape(
            name: "M17 ID with doubled dots",
            json:
                #"{"assetPackID":"foes..c3","downloadPolicy":{"onDemand":{}},"fileSelectors":[{"file":"a"}],"platforms":["iOS"]}"#,
            verdict: .warn("assetPackID.appStoreConnect")),
        Shape(
            name: "M17 ID with an underscore",
            json:
                #"{"assetPackID":"foes_c3","downloadPolicy":{"onDemand":{}},"fileSelectors":[{"file":"a"}],"platforms":["iOS"]}"#,
            verdict: .warn("assetPackID.appStoreConnect")),
        Shape(
            name: "M17 empty ID",
            json:
                #"{"assetPackID":"","downloadPolicy":{"onDemand":{}},"fileSelectors":[{"file":"a"}],"platforms":["iOS"]}"#,
            verdict: .refuse("assetPackID.rule")),
        Shape(
            name: "M17 non-ASCII ID",
            json:
                #"{"assetPackID":"fóes","downloadPolicy":{"onDemand":{}},"fileSelectors":[{"file":"a"}],"platforms":["iOS"]}"#,
            verdict: .refuse("assetPackID.rule")),
        Shape(
            name: "M18 dots rewritten to hyphens",
            json: """
                {"assetPackID":"diceroll-core3d-c7","downloadPolicy":{"essential":{"installationEventTypes":["firstInstallation","subsequentUpdate"]}},"fileSelectors":[{"directory":"pkey/diceroll-core3d-c7"}],"platforms":["iOS","macOS"]}
                """, verdict: .accept),
        Shape(
            name: "M19 reverse-DNS ID, mixed selectors split across lines",
            json: """
                {
                    "assetPackID": "no.blogspot.RawCull.models.clip-openai",
                    "downloadPolicy": { "onDemand": {} },
                    "fileSelectors": [
                        { "file": "Models/CLIP-OpenAI/config.json" },
                        {
                            "directory": "Models/CLIP-OpenAI/clip-vit-base-patch32_float16_static.aimodel"
                        }
                    ],
                    "platforms": ["macOS"]
                }
                """, verdict: .warn("assetPackID.appStoreConnect")),
        Shape(
            name: "M20 multi-pack root with nested directory objects",
            json: """
                {"toolsVersion":"1.0.0","assetPacks":[{"assetPackID":"clip","fileSelectors":[{"directory":{"source":"CLIP","destination":"Models/CLIP"}}]}]}
                """, verdict: .refuse("root.onePack")),
        Shape(
            name: "M21 embedded copy with toolsVersion",
            json: """
                {"toolsVersion":"2.0","assetPackID":"Tutorial","downloadPolicy":{"onDemand":{}},"fileSelectors":[{"file":"a"}],"platforms":["iOS"]}
                """, verdict: .warn("key.ignored")),
        Shape(
            name: "M22 iPadOS in platforms",
            json:
                #"{"assetPackID":"P","downloadPolicy":{"onDemand":{}},"fileSelectors":[{"file":"a"}],"platforms":["iOS","iPadOS","macOS"]}"#,
            verdict: .refuse("platforms.unknown")),
        Shape(
            name: "M23 empty platforms",
            json:
                #"{"assetPackID":"P","downloadPolicy":{"onDemand":{}},"fileSelectors":[{"file":"a"}],"platforms":[]}"#,
            verdict: .refuse("platforms.empty")),
        Shape(
            name: "M24 trailing slash on a directory",
            json:
                #"{"assetPackID":"P","downloadPolicy":{"onDemand":{}},"fileSelectors":[{"directory":"dir/"}],"platforms":["iOS"]}"#,
            verdict: .accept),
        Shape(
            name: "M24 no platforms key",
            json: #"{"assetPackID":"P","downloadPolicy":{"onDemand":{}},"fileSelectors":[{"directory":"dir"}]}"#,
            verdict: .refuse("platforms.required")),
        Shape(
            name: "M24 no downloadPolicy key",
            json: #"{"assetPackID":"P","fileSelectors":[{"directory":"dir"}],"platforms":["iOS"]}"#,
            verdict: .refuse("downloadPolicy.required")),
        Shape(
            name: "M25 onDemand must be an object, not null",
            json:
                #"{"assetPackID":"P","downloadPolicy":{"onDemand":null},"fileSelectors":[{"file":"a"}],"platforms":["iOS"]}"#,
            verdict: .refuse("downloadPolicy.onDemandEmpty")),
        Shape(
            name: "M25 onDemand must be an object, not a list",
            json:
                #"{"assetPackID":"P","downloadPolicy":{"onDemand":[]},"fileSelectors":[{"file":"a"}],"platforms":["iOS"]}"#,
            verdict: .refuse("downloadPolicy.onDemandEmpty")),
        Shape(
            name: "M25 directory \".\" (ba-package 1.2 fails; Backlot takes the root)",
            json:
                #"{"assetPackID":"P","downloadPolicy":{"onDemand":{}},"fileSelectors":[{"directory":"."}],"platforms":["iOS"]}"#,
            verdict: .accept),
        Shape(
            name: "Edge 14: selector with no known key (Apple: one or two keys should be present)",
            json: #"{"assetPackID":"P","downloadPolicy":{"onDemand":{}},"fileSelectors":[{}],"platforms":["iOS"]}"#,
            verdict: .refuse("selector.noKey")),
        Shape(
            name: "Edge 24: Windows backslashes",
            json:
                #"{"assetPackID":"P","downloadPolicy":{"onDemand":{}},"fileSelectors":[{"file":"Textures\\a.png"}],"platforms":["iOS"]}"#,
            verdict: .refuse("path.backslash")),
    ]

    @Test(arguments: shapes)
    func shapeGetsItsVerdict(_ shape: Shape) throws {
        let result = try PackManifest.parse(Array(shape.json.utf8), source: "Manifest.json")
        switch shape.verdict {
        case .accept:
            #expect(result.manifest != nil, "\(result.diagnostics)")
            #expect(result.warnings.isEmpty, "\(result.warnings)")
        case .warn(let rule):
            #expect(result.manifest != nil, "\(result.diagnostics)")
            #expect(result.warnings.contains { $0.rule == rule }, "\(result.diagnostics)")
        case .refuse(let rule):
            #expect(result.manifest == nil)
            #expect(result.errors.contains { $0.rule == rule }, "\(result.diagnostics)")
        }
    }

    @Test func escapedSlashesAndUserInfoSurvive() throws {
        let m12 = Self.shapes.first { $0.name.hasPrefix("M12") }!
        let (manifest, _) = try PackManifest.load(Array(m12.json.utf8), source: "M.json")
        #expect(manifest.fileSelectors == [.file("Terrain/us.bin")])
        #expect(manifest.userInfo?.serialized() == #"{"payloadSHA256":"abc","regionID":"us"}"#)
    }

    /// Apple's own template text (WWDC25-325), filled in the way its comments say, packages as is.
    @Test func applesTemplateFilledInPackages() throws {
        let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
            "Fixtures/apple-manifest-template.jsonc")
        var text = try String(contentsOf: fixture, encoding: .utf8)
        #expect(text.contains("“essential”"), "the fixture keeps Apple's curly quotes in comments")
        // Unfilled, it parses as JSON but names the placeholders.
        let unfilled = try PackManifest.parse(Array(text.utf8), source: "Manifest.json")
        #expect(unfilled.errors.contains { $0.rule == "assetPackID.rule" && $0.message.contains("placeholder") })
        #expect(unfilled.errors.contains { $0.rule == "path.placeholder" })

        text = text.replacingOccurrences(of: "[Asset-Pack ID]", with: "Tutorial")
            .replacingOccurrences(of: "[Path to File]", with: "Videos/Introduction.m4v")
            .replacingOccurrences(of: "[Path to Directory]", with: "Textures")
        let dir = try TemporaryDirectory("apple-template")
        defer { dir.remove() }
        try dir.write("Manifest.json", text)
        try dir.write("src/Videos/Introduction.m4v", [UInt8](repeating: 7, count: 10_000))
        try dir.write("src/Textures/a.png", "png")
        let (manifest, warnings) = try PackManifest.load(path: dir.at("Manifest.json"))
        #expect(warnings.isEmpty)
        #expect(manifest.platforms == [.iOS, .macOS, .tvOS, .visionOS])
        let selection = try SourceSelection(manifest: manifest, sourceRoot: dir.at("src"))
        _ = try PackWriter().write(manifest: manifest, selection: selection, to: dir.at("Tutorial.pack"))
        let pack = try PackReader(path: dir.at("Tutorial.pack"))
        try pack.verify()
        #expect(pack.index.files.map(\.path) == ["Textures/a.png", "Videos/Introduction.m4v"])
    }

    /// Backlot's own template is Apple's, plus comments; filled the same way it packages too.
    @Test func backlotsTemplateFilledInParses() throws {
        let text = ManifestTemplate.text.replacingOccurrences(of: "[Asset-Pack ID]", with: "Tutorial")
            .replacingOccurrences(of: "[Path to File]", with: "a").replacingOccurrences(
                of: "[Path to Directory]", with: "b")
        let result = try PackManifest.parse(Array(text.utf8), source: "Manifest.json")
        #expect(result.manifest != nil && result.warnings.isEmpty, "\(result.diagnostics)")
    }
}
