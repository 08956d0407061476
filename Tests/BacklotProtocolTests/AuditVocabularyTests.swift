import BacklotProtocol
import Foundation
import Testing

/// The audit trail's wire vocabulary is the one docs/protocol.md ("The audit trail") gives: every
/// action and every `details` key in its table, and nothing the table does not name.
struct AuditVocabularyTests {
    /// The rows of the table: each row's actions (first column) and detail keys (last column).
    static func documentedTable() throws -> (actions: Set<String>, details: Set<String>) {
        let docs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs/protocol.md")
        let text = try String(contentsOf: docs, encoding: .utf8)
        let section = try #require(text.components(separatedBy: "### The audit trail").dropFirst().first)
        var actions = Set<String>()
        var details = Set<String>()
        for line in section.split(separator: "\n").prefix(while: { !$0.hasPrefix("### ") }) where line.hasPrefix("| `")
        {
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map {
                $0.trimmingCharacters(in: .whitespaces)
            }
            guard cells.count >= 4, cells[1] != "`action`" else { continue }  // the header
            actions.formUnion(Self.quoted(cells[1]))
            // A detail is a quoted word of the last column, or of the second where it names one
            // in parentheses (`candidate: dropped`).
            details.formUnion(Self.quoted(cells[3]).filter { !$0.contains(":") })
        }
        return (actions, details)
    }

    static func quoted(_ cell: String) -> [String] {
        cell.components(separatedBy: "`").enumerated().filter { $0.offset % 2 == 1 }.map(\.element)
    }

    @Test func everyActionIsDocumentedAndNoOther() throws {
        let table = try Self.documentedTable()
        #expect(table.actions == Set(API.AuditAction.allCases.map(\.rawValue)))
        #expect(API.auditActions == API.AuditAction.allCases.map(\.rawValue), "the list the API declares")
    }

    @Test func everyDetailKeyIsDocumented() throws {
        let table = try Self.documentedTable()
        let keys = Set(API.AuditDetail.allCases.map(\.rawValue))
        #expect(keys.subtracting(table.details).isEmpty, "undocumented: \(keys.subtracting(table.details).sorted())")
        #expect(
            table.details.subtracting(keys).isEmpty,
            "documented but never written: \(table.details.subtracting(keys).sorted())")
    }
}
