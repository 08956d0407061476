/// The App Clip size limits, in one table, and the rule that picks the one that applies.
///
/// Apple limits the **uncompressed** size of an App Clip's main bundle, measured on each thinned
/// variant, and the limit follows the clip's **minimum deployment target**: a clip that still
/// supports iOS 15 gets 10 MB even on a device running iOS 17. The table, newest rule last:
///
/// | rule | applies when | limit |
/// |---|---|---|
/// | ``upToIOS15`` | minimum iOS ≤ 15 | 10 MB |
/// | ``iOS16`` | minimum iOS 16 (16.x) | 15 MB |
/// | ``iOS17Physical`` | minimum iOS ≥ 17, physical (or both kinds of) invocations, no demo link | 15 MB |
/// | ``iOS17DigitalOnly`` | minimum iOS ≥ 17, digital invocations only, no demo link | 100 MB |
/// | ``iOS17DemoLink`` | minimum iOS ≥ 17, launched by the App Store Connect demo link, any invocations | 100 MB |
///
/// History (each rule's ``history`` has the details and docs/app-clips.md the sources):
/// - 2020, iOS 14: App Clips arrive with a 10 MB limit.
/// - 2022, iOS 16: 15 MB.
/// - WWDC23, iOS 17: 50 MB for clips invoked only digitally; physical invocations keep 15 MB.
///   Apple has since raised the digital-only limit to 100 MB (today's documentation and App Store
///   Connect's "Maximum build file sizes" say 100 MB for iOS 17 and later).
/// - June 2025: the demo link allows 100 MB with physical invocations too.
///
/// **MB means 1,000,000 bytes**, as everywhere in Apple's size documentation and App Store
/// Connect (decimal units; see ``bytesPerMegabyte``). A clip is within its limit when its size is
/// at most ``limitBytes``: exactly 15,000,000 bytes passes a 15 MB limit, one byte more does not.
///
/// ```swift
/// let rule = AppClipSizeRule.rule(minimumOS: 17, invocations: .both, demoLink: false)
/// rule.name                        // "iOS 17 and later, physical invocations"
/// rule.limitBytes                  // 15_000_000
/// rule.allows(15_000_001)          // false
/// AppClipSizeRule.rule(minimumOS: 17, invocations: .digital, demoLink: false).limitBytes   // 100_000_000
/// ```
public struct AppClipSizeRule: Sendable, Hashable, CustomStringConvertible {
    /// A stable identifier for programs (`ios15-and-earlier`, `ios16`, `ios17-physical`,
    /// `ios17-digital-only`, `ios17-demo-link`).
    public let id: String
    /// A short name for people: "iOS 16".
    public let name: String
    /// The largest allowed uncompressed size, in bytes.
    public let limitBytes: UInt64
    /// When the rule applies, in one sentence.
    public let summary: String
    /// Where the limit comes from, oldest first, with dates.
    public let history: [String]
    /// What to do when a clip is over this limit.
    public let whenOver: String

    /// One MB as Apple counts it: 10^6 bytes (decimal), not 2^20.
    public static let bytesPerMegabyte: UInt64 = 1_000_000

    /// Whether a clip of `bytes` (uncompressed) is within the limit: at most ``limitBytes``.
    public func allows(_ bytes: UInt64) -> Bool { bytes <= limitBytes }

    /// `iOS 16: 15 MB`.
    public var description: String { "\(name): \(Self.megabytes(limitBytes))" }

    // MARK: - The table

    /// A clip that supports iOS 15 or earlier: 10 MB, whatever its invocations.
    public static let upToIOS15 = AppClipSizeRule(
        id: "ios15-and-earlier", name: "iOS 15 and earlier", limitBytes: 10 * bytesPerMegabyte,
        summary:
            "the App Clip supports iOS 15 or earlier, so the original 10 MB limit applies whatever its invocations",
        history: [
            "2020, iOS 14 (WWDC20): App Clips are introduced with a 10 MB limit on the uncompressed, thinned variant.",
            "WWDC23: the 10 MB limit still applies to every App Clip that targets iOS 15 or earlier.",
        ],
        whenOver:
            "raise the App Clip's deployment target (iOS 16: 15 MB; iOS 17 with digital invocations only: 100 MB), "
            + "or download content after launch with Background Assets")

    /// A clip whose oldest supported iOS is 16 (16.0 to 16.7): 15 MB.
    public static let iOS16 = AppClipSizeRule(
        id: "ios16", name: "iOS 16", limitBytes: 15 * bytesPerMegabyte,
        summary: "the App Clip's oldest supported iOS is 16, so the limit is 15 MB whatever its invocations",
        history: [
            "2022, iOS 16: the limit rises from 10 MB to 15 MB for App Clips that support iOS 16 and later.",
            "2023: an Apple article briefly offered 50 MB from iOS 16.4 for digital-only clips, but App Store Connect kept "
                + "refusing more than 15 MB for a 16.4 deployment target (ITMS-90865); Apple's table now starts the larger "
                + "limit at iOS 17.",
        ],
        whenOver: "with iOS 17 as the deployment target and digital invocations only, the limit is 100 MB; "
            + "or download content after launch with Background Assets")

    /// iOS 17 or later with App Clip Codes, QR codes or NFC tags (and no demo link): the iOS 16 limit, 15 MB.
    public static let iOS17Physical = AppClipSizeRule(
        id: "ios17-physical", name: "iOS 17 and later, physical invocations", limitBytes: 15 * bytesPerMegabyte,
        summary: "App Clip Codes, QR codes or NFC tags can launch the clip, so it keeps the iOS 16 limit of 15 MB "
            + "(people may be on the go, on a cellular network)",
        history: [
            "WWDC23, iOS 17: clips with physical invocations keep the 15 MB limit of iOS 16 so that they launch quickly on the go.",
            "Apple's current table: the 100 MB limit requires digital invocations only; the demo link is the one exception.",
        ],
        whenOver:
            "drop physical invocations (digital only allows 100 MB), launch it with the App Store Connect demo link "
            + "(100 MB with physical invocations), or download content after launch with Background Assets")

    /// iOS 17 or later, digital invocations only: 100 MB (announced as 50 MB at WWDC23, since raised).
    public static let iOS17DigitalOnly = AppClipSizeRule(
        id: "ios17-digital-only", name: "iOS 17 and later, digital invocations only",
        limitBytes: 100 * bytesPerMegabyte,
        summary: "the clip supports no iOS before 17 and only digital invocations (website, Spotlight, Messages), "
            + "where a reliable connection is likely, so the limit is 100 MB",
        history: [
            "WWDC23, iOS 17 (\"What's new in App Clips\"): 50 MB for clips invoked only digitally.",
            "Since raised to 100 MB: Apple's size table and App Store Connect's \"Maximum build file sizes\" give 100 MB for "
                + "iOS 17 and later when the clip supports only digital invocations, is used where a reliable internet "
                + "connection is likely, and supports no iOS version before 17.",
        ],
        whenOver: "100 MB is the largest App Clip limit: download the rest after launch with Background Assets "
            + "(an App Clip can't make a download essential)")

    /// iOS 17 or later, launched by the App Store Connect demo link: 100 MB, physical invocations allowed.
    public static let iOS17DemoLink = AppClipSizeRule(
        id: "ios17-demo-link", name: "iOS 17 and later, demo link", limitBytes: 100 * bytesPerMegabyte,
        summary:
            "the clip is a demo launched by its App Store Connect demo link, which allows 100 MB even with physical invocations",
        history: [
            "June 2025: demo App Clips; the autogenerated demo link offers an App Clip of up to 100 MB that supports physical invocations.",
            "Apple lists the demo link as the exception within the iOS 17 and later row, and the limit follows the minimum "
                + "deployment target, so Backlot applies it only to clips that support no iOS before 17.",
        ],
        whenOver: "100 MB is the largest App Clip limit: download the rest after launch with Background Assets "
            + "(an App Clip can't make a download essential)")

    /// Every rule, in the order ``rule(minimumOS:invocations:demoLink:)`` considers them.
    public static let all: [AppClipSizeRule] = [upToIOS15, iOS16, iOS17Physical, iOS17DigitalOnly, iOS17DemoLink]

    /// The rule that applies to a clip.
    ///
    /// - Parameters:
    ///   - minimumOS: the major version of the clip's deployment target (16.4 is 16). App Clips
    ///     exist since iOS 14; anything at or below 15 gets ``upToIOS15``.
    ///   - invocations: how the clip is launched.
    ///   - demoLink: whether the clip is launched by its App Store Connect demo link.
    ///
    /// The order: the deployment target first (≤ 15 → 10 MB, 16 → 15 MB, whatever the other two);
    /// then, for iOS 17 and later, the demo link (100 MB, any invocations); then digital only
    /// (100 MB) or physical (15 MB).
    public static func rule(minimumOS: Int, invocations: AppClipInvocations, demoLink: Bool) -> AppClipSizeRule {
        if minimumOS <= 15 { return upToIOS15 }
        if minimumOS == 16 { return iOS16 }
        if demoLink { return iOS17DemoLink }
        return invocations.includesPhysical ? iOS17Physical : iOS17DigitalOnly
    }

    /// `bytes` in Apple's (decimal) megabytes with two decimals, rounded half up: `12.35 MB`.
    public static func megabytes(_ bytes: UInt64) -> String {
        let hundredths = bytes / 10_000 + (bytes % 10_000 >= 5_000 ? 1 : 0)
        let fraction = hundredths % 100
        return "\(hundredths / 100).\(fraction < 10 ? "0" : "")\(fraction) MB"
    }
}
