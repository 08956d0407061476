import BacklotAppClips
import BacklotBasics
import BacklotFormat
import BacklotJSON

/// `backlot clip size PATH [--min-os N] [--invocations digital|physical|both] [--demo-link] [--json]`:
/// an App Clip's uncompressed size against the limit that applies (see ``AppClipSizeRule``).
///
/// ```sh
/// backlot clip size build/Clip.app --min-os 17 --invocations digital
/// backlot clip size Clip.ipa --min-os 16 --json     # exit status 1 when over the limit
/// ```
struct ClipSizeCommand: Command {
    static let minimumOS = Option<String?>(
        "min-os", "VERSION",
        help: "The oldest iOS the clip supports: 14, 15, 16, 17, … (default 17; 16.4 counts as 16).")
    static let invocations = Option<String?>("invocations", "KIND", help: "digital, physical or both (default both).")
    static let demoLink = Flag(
        "demo-link",
        help: "The clip is launched by its App Store Connect demo link (100 MB from iOS 17, physical invocations too).")
    static let spec = CommandSpec(
        name: "clip size",
        summary:
            "Check an App Clip's uncompressed size (a directory, .zip/.ipa or .tar) against the limit that applies; exit status 1 when over.",
        discussion: """
            The limit follows the oldest iOS the clip supports: 15 or earlier 10 MB; 16 15 MB; 17 and later
            100 MB with digital invocations only, 15 MB with physical ones (App Clip Codes, QR codes, NFC),
            100 MB with the demo link whatever the invocations. MB is Apple's: 1,000,000 bytes.
            """,
        arguments: [.init("PATH", help: "The App Clip: its .app directory, a .zip or .ipa, or an uncompressed .tar.")],
        options: [minimumOS, invocations, demoLink, packs, jsonFlag])
    static let packs = Option<[String]>(
        "pack", "PACK",
        help:
            "A .pack the clip installs with it, counted at its install size; for a pack with variants, the largest variant a device can get."
    )

    static func run(_ arguments: ParsedArguments, io: any CommandIO) throws {
        let minimumOS = try parseMinimumOS(arguments)
        let invocations = try parseInvocations(arguments)
        let demoLink = arguments[Self.demoLink]
        let size = try AppClipSize(measuring: arguments.positionals[0])
        let counted = try arguments[packs].map { path -> AppClipSizeReport.Pack in
            let index = try PackReader(path: path).index
            let largest = try index.installs(source: path).max { $0.bytes < $1.bytes }!
            return .init(
                id: index.metadata.assetPackID.rawValue,
                variant: index.metadata.variants == nil ? nil : largest.choice.description, bytes: largest.bytes)
        }
        let report = AppClipSizeReport(
            size: size, minimumOS: minimumOS, invocations: invocations, demoLink: demoLink, packs: counted)
        if arguments[jsonFlag] {
            try io.outJSON(report)
        } else {
            io.out(text(report))
        }
        if report.isOver {
            throw BacklotError(
                .checkFailed,
                "the App Clip is \(report.overflowBytes) bytes over the \(AppClipSizeRule.megabytes(report.limitBytes)) limit (\(report.rule.name))",
                context: size.path, hint: report.rule.whenOver)
        }
    }

    /// `--min-os`: a major iOS version from 14 to 99, or a dotted version whose major part decides (16.4 → 16).
    static func parseMinimumOS(_ arguments: ParsedArguments) throws -> Int {
        guard let text = arguments[minimumOS] else { return 17 }
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        let wellFormed =
            parts.count <= 3
            && parts.allSatisfy { part in !part.isEmpty && part.allSatisfy { $0.isASCII && $0.isNumber } }
        guard wellFormed, let major = Int(parts[0]), (14...99).contains(major) else {
            throw BacklotError(
                .usage, "--min-os must be an iOS version from 14 to 99, such as 15, 16 or 17, not '\(text)'",
                context: "backlot \(spec.name)",
                hint: "App Clips exist since iOS 14; the limit follows the major version (16.4 counts as 16)")
        }
        return major
    }

    /// `--invocations`: digital, physical or both.
    static func parseInvocations(_ arguments: ParsedArguments) throws -> AppClipInvocations {
        guard let text = arguments[invocations] else { return .both }
        guard let invocations = AppClipInvocations(rawValue: text.lowercased()) else {
            let accepted = AppClipInvocations.allCases.map(\.rawValue).joined(separator: ", ")
            throw BacklotError(
                .usage, "--invocations must be one of \(accepted), not '\(text)'", context: "backlot \(spec.name)",
                hint:
                    "digital: websites, Messages, Spotlight, Maps, other apps; physical: App Clip Codes, QR codes, NFC tags"
            )
        }
        return invocations
    }

    /// The human-readable report.
    static func text(_ report: AppClipSizeReport) -> String {
        let size = report.size
        let fileWord = size.files.count == 1 ? "file" : "files"
        var text = "\(size.path)  (\(size.form.rawValue), \(size.files.count) \(fileWord))\n"
        text += "  size       \(AppClipSizeRule.megabytes(report.totalBytes)) (\(report.totalBytes) bytes)\n"
        for pack in report.packs {
            text +=
                "    pack     \(pack.id): \(AppClipSizeRule.megabytes(pack.bytes)) (\(pack.bytes) bytes)\(pack.variant.map { ", largest variant \($0)" } ?? "")\n"
        }
        text += "  limit      \(AppClipSizeRule.megabytes(report.limitBytes)) (\(report.limitBytes) bytes)\n"
        text += "  rule       \(report.rule.name): \(report.rule.summary)\n"
        text +=
            "  for        iOS \(report.minimumOS) and later, \(report.invocations.rawValue) invocations\(report.demoLink ? ", demo link" : "")\n"
        if report.isOver {
            text +=
                "  overflow   \(AppClipSizeRule.megabytes(report.overflowBytes)) (\(report.overflowBytes) bytes) over the limit\n"
        } else {
            let headroom = report.limitBytes - report.totalBytes  // within the limit: no underflow, no conversion
            text += "  headroom   \(AppClipSizeRule.megabytes(headroom)) (\(headroom) bytes)\n"
        }
        if !report.largestFiles.isEmpty {
            text += "\n\(report.largestFiles.count) largest \(report.largestFiles.count == 1 ? "file" : "files"):\n"
            let width = report.largestFiles.map { String($0.bytes).count }.max() ?? 0
            for f in report.largestFiles {
                let megabytes = AppClipSizeRule.megabytes(f.bytes)
                let bytes = String(f.bytes)
                text += "  " + leftPadded(megabytes, 10) + "  " + leftPadded(bytes, width) + "  " + f.path + "\n"
            }
        }
        return text
    }

    private static func leftPadded(_ s: String, _ width: Int) -> String {
        s.count >= width ? s : String(repeating: " ", count: width - s.count) + s
    }
}
