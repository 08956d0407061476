import Foundation
import Testing

/// The concurrency rule of docs/architecture.md, checked over the sources: no `NSLock`, and every
/// `@unchecked Sendable` says why it is safe (a `// Safe because:` comment just above it), so that
/// one written without a proof fails here rather than in review.
@Suite struct ConcurrencyRuleTests {
    static let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Sources").path

    /// Every Swift file under Sources, with its lines.
    static func files() throws -> [(path: String, lines: [Substring])] {
        let enumerator = try #require(FileManager.default.enumerator(atPath: sources))
        var files: [(String, [Substring])] = []
        for case let relative as String in enumerator where relative.hasSuffix(".swift") {
            let text = try String(contentsOfFile: sources + "/" + relative, encoding: .utf8)
            files.append((relative, text.split(separator: "\n", omittingEmptySubsequences: false)))
        }
        return files
    }

    @Test func everyUncheckedSendableSaysWhyItIsSafe() throws {
        let files = try Self.files()
        #expect(files.count > 100, "the sources were found at \(Self.sources)")
        var unproven: [String] = []
        var count = 0
        for (path, lines) in files {
            for (i, line) in lines.enumerated() where line.contains("@unchecked Sendable") {
                let code = line.split(separator: "//", maxSplits: 1).first ?? ""
                guard code.contains("@unchecked Sendable"), !line.trimmingCharacters(in: .whitespaces).hasPrefix("///")
                else { continue }
                count += 1
                let above = lines[max(0, i - 8)..<i]
                if !above.contains(where: { $0.contains("// Safe because:") }) { unproven.append("\(path):\(i + 1)") }
            }
        }
        #expect(count > 0, "no @unchecked Sendable found: the search is broken")
        #expect(unproven.isEmpty, "without a `// Safe because:` comment above: \(unproven)")
    }

    @Test func noNSLock() throws {
        let uses = try Self.files().flatMap { file in
            file.lines.enumerated().filter { $0.element.contains("NSLock") }.map { "\(file.path):\($0.offset + 1)" }
        }
        #expect(uses.isEmpty, "NSLock at \(uses): use a Mutex (Synchronization)")
    }
}
