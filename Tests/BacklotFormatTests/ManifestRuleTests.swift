import BacklotBasics
import BacklotJSON
import Testing

@testable import BacklotFormat

/// One test per manifest rule: each case breaks exactly one rule and must be reported under that
/// rule's name, at the right JSON path, with a fix.
struct ManifestRuleTests {
    static let policy = #""downloadPolicy": {"onDemand": {}}"#
    static let selectors = #""fileSelectors": [{"file": "a.txt"}]"#
    static let platforms = #""platforms": ["iOS"]"#
    static let id = #""assetPackID": "Tutorial""#

    static func manifest(_ parts: String...) -> String { "{" + parts.joined(separator: ",") + "}" }

    struct Case: Sendable, CustomTestStringConvertible {
        let rule: String
        let path: String
        let json: String
        var testDescription: String { rule }
    }

    static let errorCases: [Case] = [
        Case(rule: "root.object", path: "(root)", json: "[1]"),
        Case(rule: "root.onePack", path: "assetPacks", json: #"{"assetPacks": []}"#),
        Case(
            rule: "key.unknown", path: "assetPackId",
            json: manifest(#""assetPackId": "T""#, policy, selectors, platforms)),
        Case(rule: "key.unknown", path: "colour", json: manifest(id, policy, selectors, platforms, #""colour": 1"#)),
        Case(rule: "assetPackID.required", path: "assetPackID", json: manifest(policy, selectors, platforms)),
        Case(
            rule: "assetPackID.type", path: "assetPackID",
            json: manifest(#""assetPackID": 7"#, policy, selectors, platforms)),
        Case(
            rule: "assetPackID.rule", path: "assetPackID",
            json: manifest(#""assetPackID": "a b""#, policy, selectors, platforms)),
        Case(
            rule: "assetPackID.rule", path: "assetPackID",
            json: manifest(#""assetPackID": "..""#, policy, selectors, platforms)),
        Case(
            rule: "assetPackID.rule", path: "assetPackID",
            json: manifest(#""assetPackID": "[Asset-Pack ID]""#, policy, selectors, platforms)),
        Case(
            rule: "assetPackID.rule", path: "assetPackID",
            json: manifest(#""assetPackID": """#, policy, selectors, platforms)),
        Case(
            rule: "assetPackID.rule", path: "assetPackID",
            json: manifest(#""assetPackID": "-lead""#, policy, selectors, platforms)),
        Case(
            rule: "assetPackID.rule", path: "assetPackID",
            json: manifest(#""assetPackID": "fóes""#, policy, selectors, platforms)),
        Case(
            rule: "assetPackID.rule", path: "assetPackID",
            json: manifest("\"assetPackID\": \"\(String(repeating: "a", count: 256))\"", policy, selectors, platforms)),
        Case(rule: "downloadPolicy.required", path: "downloadPolicy", json: manifest(id, selectors, platforms)),
        Case(
            rule: "downloadPolicy.type", path: "downloadPolicy",
            json: manifest(id, #""downloadPolicy": "onDemand""#, selectors, platforms)),
        Case(
            rule: "downloadPolicy.exactlyOne", path: "downloadPolicy",
            json: manifest(
                id,
                #""downloadPolicy": {"onDemand": {}, "prefetch": {"installationEventTypes": ["firstInstallation"]}}"#,
                selectors, platforms)),
        Case(
            rule: "downloadPolicy.exactlyOne", path: "downloadPolicy",
            json: manifest(id, #""downloadPolicy": {}"#, selectors, platforms)),
        Case(
            rule: "downloadPolicy.unknownKey", path: "downloadPolicy.ondemand",
            json: manifest(id, #""downloadPolicy": {"ondemand": {}}"#, selectors, platforms)),
        Case(
            rule: "downloadPolicy.onDemandEmpty", path: "downloadPolicy.onDemand",
            json: manifest(id, #""downloadPolicy": {"onDemand": null}"#, selectors, platforms)),
        Case(
            rule: "downloadPolicy.onDemandEmpty", path: "downloadPolicy.onDemand",
            json: manifest(id, #""downloadPolicy": {"onDemand": {"installationEventTypes": []}}"#, selectors, platforms)
        ),
        Case(
            rule: "downloadPolicy.eventTypesRequired", path: "downloadPolicy.prefetch.installationEventTypes",
            json: manifest(id, #""downloadPolicy": {"prefetch": {}}"#, selectors, platforms)),
        Case(
            rule: "downloadPolicy.eventTypesRequired", path: "downloadPolicy.essential.installationEventTypes",
            json: manifest(id, #""downloadPolicy": {"essential": {}}"#, selectors, platforms)),
        Case(
            rule: "downloadPolicy.eventTypesEmpty", path: "downloadPolicy.essential.installationEventTypes",
            json: manifest(
                id, #""downloadPolicy": {"essential": {"installationEventTypes": []}}"#, selectors, platforms)),
        Case(
            rule: "downloadPolicy.eventTypeUnknown", path: "downloadPolicy.essential.installationEventTypes[1]",
            json: manifest(
                id, #""downloadPolicy": {"essential": {"installationEventTypes": ["firstInstallation", "launch"]}}"#,
                selectors, platforms)),
        Case(
            rule: "downloadPolicy.eventTypesType", path: "downloadPolicy.essential.installationEventTypes",
            json: manifest(
                id, #""downloadPolicy": {"essential": {"installationEventTypes": "firstInstallation"}}"#, selectors,
                platforms)),
        Case(rule: "fileSelectors.required", path: "fileSelectors", json: manifest(id, policy, platforms)),
        Case(
            rule: "fileSelectors.type", path: "fileSelectors",
            json: manifest(id, policy, #""fileSelectors": {"file": "a"}"#, platforms)),
        Case(
            rule: "fileSelectors.empty", path: "fileSelectors",
            json: manifest(id, policy, #""fileSelectors": []"#, platforms)),
        Case(
            rule: "fileSelectors.onlyExclusions", path: "fileSelectors",
            json: manifest(id, policy, #""fileSelectors": [{"fileExclusion": "*.tmp"}]"#, platforms)),
        Case(
            rule: "selector.type", path: "fileSelectors[0]",
            json: manifest(id, policy, #""fileSelectors": ["a.txt"]"#, platforms)),
        Case(
            rule: "selector.noKey", path: "fileSelectors[0]",
            json: manifest(id, policy, #""fileSelectors": [{}]"#, platforms)),
        Case(
            rule: "selector.unknownKey", path: "fileSelectors[0].files",
            json: manifest(id, policy, #""fileSelectors": [{"files": "a"}]"#, platforms)),
        Case(
            rule: "selector.halfPair", path: "fileSelectors[0]",
            json: manifest(id, policy, #""fileSelectors": [{"fileSource": "a"}]"#, platforms)),
        Case(
            rule: "selector.halfPair", path: "fileSelectors[0]",
            json: manifest(id, policy, #""fileSelectors": [{"directoryDestination": "a"}]"#, platforms)),
        Case(
            rule: "selector.twoKinds", path: "fileSelectors[0]",
            json: manifest(id, policy, #""fileSelectors": [{"file": "a", "directory": "b"}]"#, platforms)),
        Case(
            rule: "path.type", path: "fileSelectors[0].file",
            json: manifest(id, policy, #""fileSelectors": [{"file": 3}]"#, platforms)),
        Case(
            rule: "path.empty", path: "fileSelectors[0].file",
            json: manifest(id, policy, #""fileSelectors": [{"file": ""}]"#, platforms)),
        Case(
            rule: "path.absolute", path: "fileSelectors[0].file",
            json: manifest(id, policy, #""fileSelectors": [{"file": "/etc/passwd"}]"#, platforms)),
        Case(
            rule: "path.parent", path: "fileSelectors[0].directory",
            json: manifest(id, policy, #""fileSelectors": [{"directory": "../secrets"}]"#, platforms)),
        Case(
            rule: "path.parent", path: "fileSelectors[0].file",
            json: manifest(id, policy, #""fileSelectors": [{"file": "a/../../b"}]"#, platforms)),
        Case(
            rule: "path.backslash", path: "fileSelectors[0].file",
            json: manifest(id, policy, #""fileSelectors": [{"file": "Textures\\a.png"}]"#, platforms)),
        Case(
            rule: "path.placeholder", path: "fileSelectors[0].file",
            json: manifest(id, policy, #""fileSelectors": [{"file": "[Path to File]"}]"#, platforms)),
        Case(
            rule: "path.root", path: "fileSelectors[0].file",
            json: manifest(id, policy, #""fileSelectors": [{"file": "."}]"#, platforms)),
        Case(
            rule: "path.component", path: "fileSelectors[0].file",
            json: manifest(id, policy, #""fileSelectors": [{"file": "a//b"}]"#, platforms)),
        Case(
            rule: "pattern.bracket", path: "fileSelectors[0].filePattern",
            json: manifest(id, policy, #""fileSelectors": [{"filePattern": "a[bc"}]"#, platforms)),
        Case(rule: "platforms.required", path: "platforms", json: manifest(id, policy, selectors)),
        Case(rule: "platforms.type", path: "platforms", json: manifest(id, policy, selectors, #""platforms": "iOS""#)),
        Case(rule: "platforms.empty", path: "platforms", json: manifest(id, policy, selectors, #""platforms": []"#)),
        Case(
            rule: "platforms.unknown", path: "platforms[0]",
            json: manifest(id, policy, selectors, #""platforms": ["iPadOS"]"#)),
        Case(
            rule: "platforms.unknown", path: "platforms[0]",
            json: manifest(id, policy, selectors, #""platforms": ["ios"]"#)),
        Case(
            rule: "platforms.unknown", path: "platforms[1]",
            json: manifest(id, policy, selectors, #""platforms": ["iOS", "watchOS"]"#)),
        Case(
            rule: "sourceRoot.type", path: "sourceRoot",
            json: manifest(id, policy, selectors, platforms, #""sourceRoot": 1"#)),
        Case(
            rule: "sourceRoot.empty", path: "sourceRoot",
            json: manifest(id, policy, selectors, platforms, #""sourceRoot": """#)),
        Case(
            rule: "language.type", path: "language", json: manifest(id, policy, selectors, platforms, #""language": 1"#)
        ),
        Case(
            rule: "language.bcp47", path: "language",
            json: manifest(id, policy, selectors, platforms, #""language": "english""#)),
        Case(
            rule: "language.bcp47", path: "language",
            json: manifest(id, policy, selectors, platforms, #""language": "en-US-posix""#)),
    ]

    @Test(arguments: errorCases)
    func eachRuleIsReportedByNameWithPathPositionAndFix(_ c: Case) throws {
        let result = try PackManifest.parse(Array(c.json.utf8), source: "M.json")
        #expect(result.manifest == nil)
        let hit = result.errors.first { $0.rule == c.rule }
        #expect(hit != nil, "expected \(c.rule); got \(result.diagnostics)")
        #expect(hit?.jsonPath == c.path)
        #expect(hit.map { $0.position.line >= 1 && $0.position.column >= 1 } == true)
        #expect(hit?.fix != nil || hit?.message.isEmpty == false)
    }

    @Test func loadThrowsInvalidManifestListingEveryError() {
        let json = Self.manifest(
            #""assetPackID": "a b""#, #""downloadPolicy": {"onDemand": {}, "essential": {}}"#, Self.selectors,
            #""platforms": ["iPadOS"]"#)
        #expect {
            try PackManifest.load(Array(json.utf8), source: "M.json")
        } throws: { error in
            guard let e = error as? BacklotError, e.code == .invalidManifest, e.exitStatus == 2 else { return false }
            return e.message.contains("3 errors")
                && e.message.contains("downloadPolicy: give exactly one of essential, prefetch, onDemand (found 2)")
                && e.message.contains("M.json:1:")
        }
    }

    @Test func caseMismatchedKeySuggestsTheRealOne() throws {
        let json = Self.manifest(#""assetPackId": "T""#, Self.policy, Self.selectors, Self.platforms)
        let result = try PackManifest.parse(Array(json.utf8), source: "M.json")
        #expect(result.errors.contains { $0.rule == "key.unknown" && $0.fix == "did you mean \"assetPackID\"?" })
    }

    struct WarningCase: Sendable, CustomTestStringConvertible {
        let rule: String
        let json: String
        var testDescription: String { rule }
    }

    static let warningCases: [WarningCase] = [
        WarningCase(
            rule: "assetPackID.appStoreConnect",
            json: manifest(#""assetPackID": "com.example.levels""#, policy, selectors, platforms)),
        WarningCase(
            rule: "assetPackID.appStoreConnect",
            json: manifest(#""assetPackID": "foes_c3""#, policy, selectors, platforms)),
        WarningCase(rule: "key.ignored", json: manifest(id, policy, selectors, platforms, #""toolsVersion": "2.0""#)),
        WarningCase(
            rule: "platforms.duplicate", json: manifest(id, policy, selectors, #""platforms": ["iOS", "iOS"]"#)),
        WarningCase(
            rule: "downloadPolicy.eventTypeDuplicate",
            json: manifest(
                id,
                #""downloadPolicy": {"prefetch": {"installationEventTypes": ["firstInstallation", "firstInstallation"]}}"#,
                selectors, platforms)),
        WarningCase(rule: "language.empty", json: manifest(id, policy, selectors, platforms, #""language": """#)),
        WarningCase(
            rule: "json.trailingComma", json: "{" + [id, policy, selectors, platforms].joined(separator: ",") + ",}"),
    ]

    @Test(arguments: warningCases)
    func acceptedWithAWarning(_ c: WarningCase) throws {
        let result = try PackManifest.parse(Array(c.json.utf8), source: "M.json")
        #expect(result.manifest != nil, "\(result.diagnostics)")
        #expect(result.warnings.contains { $0.rule == c.rule }, "\(result.diagnostics)")
    }

    @Test func validManifestNormalisesPolicyPlatformsAndKeepsUserInfoVerbatim() throws {
        let json = """
            {
              "userInfo": {"z": 1.50, "a": [true, null]},
              "platforms": ["linux", "iOS"],
              "fileSelectors": [{"file": "./a.txt"}, {"directory": "Textures/"}, {"directory": "."}],
              "downloadPolicy": {"prefetch": {"installationEventTypes": ["subsequentUpdate", "firstInstallation"]}},
              "assetPackID": "Tutorial",
              "language": "zh-Hans-CN"
            }
            """
        let (m, warnings) = try PackManifest.load(Array(json.utf8), source: "M.json")
        #expect(warnings.isEmpty)
        #expect(m.platforms == [.iOS, .linux])
        #expect(m.downloadPolicy == .prefetch(installationEventTypes: [.firstInstallation, .subsequentUpdate]))
        #expect(m.fileSelectors == [.file("a.txt"), .directory("Textures"), .directory("")])
        #expect(m.language == "zh-Hans-CN")
        #expect(
            m.normalizedJSON.serialized()
                == #"{"assetPackID":"Tutorial","downloadPolicy":{"prefetch":{"installationEventTypes":["firstInstallation","subsequentUpdate"]}},"language":"zh-Hans-CN","platforms":["iOS","linux"],"userInfo":{"z":1.50,"a":[true,null]}}"#
        )
    }

    @Test func allSelectorKindsParse() throws {
        let json = Self.manifest(
            Self.id, Self.policy, Self.platforms,
            """
            "fileSelectors": [
              {"file": "a"}, {"directory": "d"}, {"filePattern": "Audio/*.wav"}, {"fileExclusion": "**/draft.png"},
              {"fileSource": "build/a.png", "fileDestination": "Textures/a.png"},
              {"directorySource": "raw", "directoryDestination": "Textures"}
            ]
            """)
        let (m, _) = try PackManifest.load(Array(json.utf8), source: "M.json")
        #expect(
            m.fileSelectors == [
                .file("a"), .directory("d"), .filePattern("Audio/*.wav"), .fileExclusion("**/draft.png"),
                .fileMapping(source: "build/a.png", destination: "Textures/a.png"),
                .directoryMapping(source: "raw", destination: "Textures"),
            ])
    }

    @Test(arguments: [
        "Tutorial", "a", "A1-b2", "com.example.levels", "foes_c3", "x...y", String(repeating: "a", count: 255),
    ])
    func validPackIDs(_ text: String) throws {
        #expect(try PackID(text).rawValue == text)
    }

    @Test(arguments: [
        "", ".", "..", ".foes", "foes c3", "foes/c3", "foes:c3", "foes+c3", "fóes", "_x",
        String(repeating: "a", count: 256),
    ])
    func invalidPackIDs(_ text: String) {
        #expect(throws: BacklotError.self) { try PackID(text) }
    }

    @Test(arguments: ["en", "fr", "en-US", "zh-Hans", "zh-Hans-CN", "es-419"])
    func validLanguageTags(_ tag: String) { #expect(LanguageTag.isValid(tag)) }

    @Test(arguments: ["", "e", "english", "en-", "en-US-posix", "en_US", "zh-Hans-CN-x"])
    func invalidLanguageTags(_ tag: String) { #expect(!LanguageTag.isValid(tag)) }
}
