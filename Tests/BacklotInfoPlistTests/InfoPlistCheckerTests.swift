import BacklotBasics
import Foundation
import Testing

@testable import BacklotInfoPlist

/// Each Info.plist rule, on fixtures written by Python's plistlib in both XML and binary form.
struct InfoPlistCheckerTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")

    struct Case: Sendable, CustomTestStringConvertible {
        let fixture: String
        let errors: [String]
        let warnings: [String]
        var defines: [String: String] = [:]
        var testDescription: String { fixture }
    }

    static let cases: [Case] = [
        Case(fixture: "valid-self-hosted", errors: [], warnings: []),
        Case(fixture: "valid-apple-hosted", errors: [], warnings: []),
        Case(fixture: "manifest-http", errors: ["manifestURL.https"], warnings: []),
        Case(fixture: "manifest-missing", errors: ["manifestURL.required"], warnings: []),
        Case(fixture: "manifest-not-url", errors: ["manifestURL.invalid"], warnings: []),
        Case(fixture: "restrictions-missing", errors: ["restrictions.required"], warnings: []),
        Case(fixture: "allowance-missing", errors: ["size.required"], warnings: []),
        Case(fixture: "allowance-negative", errors: ["size.negative"], warnings: []),
        Case(fixture: "allowance-string", errors: ["size.type"], warnings: []),
        Case(fixture: "max-install-negative", errors: ["size.negative"], warnings: []),
        Case(fixture: "allowlist-bad-domain", errors: ["allowList.domain", "allowList.domain"], warnings: []),
        Case(fixture: "group-missing", errors: ["appGroupID.required"], warnings: []),
        Case(fixture: "apple-hosting-mixed", errors: [], warnings: ["hosting.mixed"]),
        Case(fixture: "group-placeholder", errors: [], warnings: ["placeholder.undefined"]),
        Case(
            fixture: "group-placeholder", errors: [], warnings: [],
            defines: ["APP_GROUP_IDENTIFIER": "group.com.example.game"]),
        Case(
            fixture: "manifest-placeholder-http", errors: ["manifestURL.https"], warnings: [],
            defines: ["ASSET_SCHEME": "http"]),
        Case(fixture: "manifest-placeholder-http", errors: [], warnings: [], defines: ["ASSET_SCHEME": "https"]),
    ]

    @Test(arguments: cases, ["xml", "binary"])
    func eachRuleOnXMLAndBinaryFixtures(_ c: Case, form: String) throws {
        let path = Self.fixtures.appendingPathComponent("\(c.fixture).\(form).plist").path
        let root = try PropertyListReader.read(path: path)
        let findings = InfoPlistChecker(defines: c.defines).check(root)
        #expect(findings.filter { $0.severity == .error }.map(\.rule) == c.errors, "\(findings)")
        #expect(findings.filter { $0.severity == .warning }.map(\.rule) == c.warnings, "\(findings)")
        #expect(findings.allSatisfy { !$0.keyPath.isEmpty && !$0.message.isEmpty })
    }

    @Test func bothFormsReadToTheSameValuesWith64BitIntegers() throws {
        let xml = try PropertyListReader.read(
            path: Self.fixtures.appendingPathComponent("valid-self-hosted.xml.plist").path)
        let binary = try PropertyListReader.read(
            path: Self.fixtures.appendingPathComponent("valid-self-hosted.binary.plist").path)
        #expect(xml == binary)
        #expect(xml.dictionary?["BAMaxInstallSize"] == .integer(23_000_000_000))
        #expect(xml.dictionary?["BAHasManagedAssetPacks"] == .bool(true))
        #expect(
            xml.dictionary?["BAInitialDownloadRestrictions"]?.dictionary?["BADownloadAllowance"]
                == .integer(9_300_000_000))
    }

    @Test func malformedPlistsAreInvalidInputNamingWhere() {
        #expect {
            try PropertyListReader.read(Array("<plist><dict><key>a</key></dict></plist>".utf8), source: "x.plist")
        } throws: {
            ($0 as? BacklotError)?.message.contains("has no value") == true
        }
        #expect {
            try PropertyListReader.read(Array("<plist><dict><string>x</string></dict></plist>".utf8), source: "x.plist")
        } throws: {
            ($0 as? BacklotError)?.code == .invalidInput
        }
        var truncated = Array("bplist00".utf8) + [UInt8](repeating: 0, count: 40)
        truncated[truncated.count - 26] = 1
        #expect(throws: BacklotError.self) { try PropertyListReader.read(truncated, source: "b.plist") }
        #expect(throws: BacklotError.self) { try PropertyListReader.read(Array("not a plist".utf8), source: "n.plist") }
    }

    @Test(arguments: ["cdn.example.com", "*.example.com", "localhost", "a-b.c1.io"])
    func domainPatternsAccepted(_ s: String) { #expect(InfoPlistChecker.isDomainPattern(s)) }

    @Test(arguments: ["", "*.", "https://x.com", "x.com/", "-a.com", "a..b", "*.*.x.com", "x.com:443", "ex ample.com"])
    func domainPatternsRefused(_ s: String) { #expect(!InfoPlistChecker.isDomainPattern(s)) }
}
