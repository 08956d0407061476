import Testing

@testable import BacklotInfoPlist

/// Placeholders expand once and detect cycles; near-miss keys get a suggestion; background-task
/// identifiers are checked.
@Suite struct InfoPlistCheckerRuleTests {
    static let base: [String: PlistValue] = [
        "BAAppGroupID": .string("$(APP_GROUP)"),
        "BAManifestURL": .string("https://cdn.example.com/manifest.json"),
        "BAInitialDownloadRestrictions": .dictionary([
            "BADownloadAllowance": .integer(1_000_000), "BAEssentialDownloadAllowance": .integer(1_000_000),
            "BADownloadDomainAllowList": .array([.string("cdn.example.com")]),
        ]),
    ]

    func findings(_ plist: [String: PlistValue], defines: [String: String] = [:]) -> [InfoPlistFinding] {
        InfoPlistChecker(defines: defines).check(.dictionary(plist))
    }

    @Test func aPlaceholderDefinedAsItselfOrInACycleEnds() {
        // Each of these looped forever before: the replacement was scanned again.
        for defines in [
            ["APP_GROUP": "$(APP_GROUP)"], ["APP_GROUP": "x$(APP_GROUP)y"], ["APP_GROUP": "$(B)", "B": "$(APP_GROUP)"],
            ["APP_GROUP": "$(B)", "B": "$(C)", "C": "$(B)"],
        ] {
            let rules = findings(Self.base, defines: defines).map(\.rule)
            #expect(rules.contains("placeholder.cycle"), "\(defines): \(rules)")
        }
        // Values that expand each other exponentially are bounded.
        var bomb: [String: String] = ["APP_GROUP": "$(V0)"]
        for i in 0..<40 { bomb["V\(i)"] = "$(V\(i + 1))$(V\(i + 1))" }
        bomb["V40"] = "group"
        #expect(findings(Self.base, defines: bomb).map(\.rule).contains("placeholder.size"))
        // A definition that names another one expands fully; an undefined one is a warning.
        #expect(findings(Self.base, defines: ["APP_GROUP": "group.$(ORG).game", "ORG": "com.example"]).isEmpty)
        #expect(findings(Self.base).map(\.rule) == ["placeholder.undefined"])
    }

    @Test func nearMissKeysAreNamedWithTheRightOne() {
        var plist = Self.base
        plist["BAAppGroupID"] = .string("group.x")
        plist["BAManifestUrl"] = plist.removeValue(forKey: "BAManifestURL")
        var restrictions = plist["BAInitialDownloadRestrictions"]!.dictionary!
        restrictions["BADownloadAllowence"] = restrictions.removeValue(forKey: "BADownloadAllowance")
        plist["BAInitialDownloadRestrictions"] = .dictionary(restrictions)
        let all = findings(plist)
        let top = all.first { $0.rule == "key.unknown" }
        #expect(top?.keyPath == "BAManifestUrl")
        #expect(top?.fix?.contains("BAManifestURL") == true)
        let inner = all.first { $0.rule == "restrictions.unknownKey" }
        #expect(inner?.keyPath == "BAInitialDownloadRestrictions.BADownloadAllowence")
        #expect(inner?.fix?.contains("BADownloadAllowance") == true)
        // Keys that are not near any Background Assets key are left alone.
        plist = Self.base
        plist["BAAppGroupID"] = .string("group.x")
        plist["CFBundleName"] = .string("Game")
        #expect(findings(plist).isEmpty)
    }

    @Test func taskIdentifiersAreChecked() {
        var plist = Self.base
        plist["BAAppGroupID"] = .string("group.x")
        plist["BGTaskSchedulerPermittedIdentifiers"] = .string("com.example.refresh")
        #expect(findings(plist).map(\.rule) == ["taskIdentifiers.type"])
        plist["BGTaskSchedulerPermittedIdentifiers"] = .array([
            .string("com.example.refresh"), .string("com.example.refresh"), .string(""), .integer(3),
            .string("refresh"),
        ])
        plist["UIBackgroundModes"] = .array([.string("fetch")])
        let rules = findings(plist).map(\.rule)
        #expect(rules.filter { $0 == "taskIdentifiers.identifier" }.count == 1)
        #expect(
            rules.contains("taskIdentifiers.duplicate") && rules.contains("taskIdentifiers.type")
                && rules.contains("taskIdentifiers.reverseDNS"))
        plist["BGTaskSchedulerPermittedIdentifiers"] = .array([.string("com.example.refresh")])
        plist["UIBackgroundModes"] = nil
        #expect(findings(plist).map(\.rule) == ["taskIdentifiers.backgroundModes"])
        plist["UIBackgroundModes"] = .array([.string("processing")])
        #expect(findings(plist).isEmpty)
    }
}
