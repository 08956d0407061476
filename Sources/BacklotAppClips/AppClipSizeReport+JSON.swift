/// The report as `clip size --json` writes it (docs/json.md): sizes in bytes, the rule, the inputs,
/// the largest files and the packs counted with the clip.
///
/// ```swift
/// let report = AppClipSizeReport(size: try AppClipSize(measuring: "Clip.app"), minimumOS: 17,
///                                invocations: .both, demoLink: false)
/// let json = try JSONEncoder().encode(report)  // {"fileCount": 2, "headroomBytes": …}
/// ```
extension AppClipSizeReport: Encodable {
    private enum Keys: String, CodingKey {
        case path, form, fileCount, sizeBytes, limitBytes, headroomBytes, overflowBytes, isOver, bytesPerMegabyte
        case rule, minimumOS, invocations, demoLink, largestFiles, clipBytes, packs
    }

    private struct Rule: Encodable {
        let id: String
        let name: String
        let summary: String
        let limitBytes: UInt64
    }

    private struct LargeFile: Encodable {
        let path: String
        let bytes: UInt64
    }

    private struct CountedPack: Encodable {
        let id: String
        let installBytes: UInt64
        let variant: String?
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Keys.self)
        try c.encode(size.path, forKey: .path)
        try c.encode(size.form.rawValue, forKey: .form)
        try c.encode(size.files.count, forKey: .fileCount)
        try c.encode(totalBytes, forKey: .sizeBytes)
        try c.encode(limitBytes, forKey: .limitBytes)
        try c.encode(headroomBytes, forKey: .headroomBytes)
        try c.encode(overflowBytes, forKey: .overflowBytes)
        try c.encode(isOver, forKey: .isOver)
        try c.encode(AppClipSizeRule.bytesPerMegabyte, forKey: .bytesPerMegabyte)
        try c.encode(
            Rule(id: rule.id, name: rule.name, summary: rule.summary, limitBytes: rule.limitBytes), forKey: .rule)
        try c.encode(minimumOS, forKey: .minimumOS)
        try c.encode(invocations.rawValue, forKey: .invocations)
        try c.encode(demoLink, forKey: .demoLink)
        try c.encode(largestFiles.map { LargeFile(path: $0.path, bytes: $0.bytes) }, forKey: .largestFiles)
        if !packs.isEmpty {
            try c.encode(size.totalBytes, forKey: .clipBytes)
            try c.encode(
                packs.map { CountedPack(id: $0.id, installBytes: $0.bytes, variant: $0.variant) }, forKey: .packs)
        }
    }
}
