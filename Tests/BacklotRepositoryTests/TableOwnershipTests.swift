import Foundation
import Testing

/// Each table of the metadata database has one owner among the repository's services, and only
/// the owner's files (`Service.swift`, `Service+Concern.swift`) hold SQL on it: another service
/// goes through the owner's API (`Uploads.facts`, `Uploads.versionCounts`, …). No statement joins
/// another service's table; one that would must be listed in ``joins``, so that it is a decision,
/// not an accident.
@Suite struct TableOwnershipTests {
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Sources/BacklotRepository/Repository").path

    /// Table → the service that owns it (the prefix of its files' names).
    static let owners: [String: String] = [
        "apps": "Apps", "packs": "Apps", "versions": "Uploads", "channel_packs": "Releases",
        "live_history": "Releases", "release_requests": "Releases", "catalogs": "Publication",
        "tokens": "Tokens", "audit": "AuditLog", "downloads": "DownloadCounts", "leases": "Leases",
        "storage_record": "Repository", "published_deltas": "Publication", "device_reports": "DeviceReports",
        "rollout_phases": "Releases",
    ]

    /// Reads of another service's table, by file (`"File.swift table"`): none.
    static let joins: Set<String> = []

    /// The service a file belongs to: its name up to `+` or `.swift` (`Upload.swift` is the uploads').
    static func service(of file: String) -> String {
        let base = String(file.prefix { $0 != "+" && $0 != "." })
        return base == "Upload" ? "Uploads" : base
    }

    @Test func onlyATablesOwnerWritesItAndReadsOfAnothersAreTheListedJoins() throws {
        // The services' files, in the folder and its subfolders (`Uploads/`, `Releases/`, …), by name.
        let enumerator = try #require(FileManager.default.enumerator(atPath: Self.folder))
        var paths: [String: String] = [:]
        for case let relative as String in enumerator where relative.hasSuffix(".swift") {
            let name = URL(fileURLWithPath: relative).lastPathComponent
            if name != "Repository+Schema.swift" { paths[name] = Self.folder + "/" + relative }
        }
        let files = paths.keys.sorted()
        #expect(files.count > 10, "no sources in \(Self.folder)")
        var foreignReads: Set<String> = []
        for file in files {
            let text = try String(contentsOfFile: try #require(paths[file]), encoding: .utf8)
            let service = Self.service(of: file)
            for match in text.matches(of: /(INSERT INTO|UPDATE|DELETE FROM|FROM|JOIN) ([a-z_]+)/) {
                let verb = String(match.output.1)
                let table = String(match.output.2)
                let owner = try #require(Self.owners[table], "\(file) names the table \(table), which has no owner")
                guard owner != service else { continue }
                #expect(verb == "FROM" || verb == "JOIN", "\(file) writes \(table) (\(verb)), which \(owner) owns")
                foreignReads.insert("\(file) \(table)")
            }
        }
        #expect(foreignReads == Self.joins)
    }

    /// Every table the schema's steps create (`Repository+Schema.swift`) has its owner listed
    /// here, and every table listed is one the steps create.
    @Test func everyTableTheSchemaCreatesHasAnOwner() throws {
        let text = try String(contentsOfFile: Self.folder + "/Repository+Schema.swift", encoding: .utf8)
        var created: Set<String> = []
        for match in text.matches(of: /CREATE TABLE (?:IF NOT EXISTS )?([a-z_]+)/) {
            let table = String(match.output.1)
            // A table rebuilt under a temporary name, then renamed to its own.
            if table.hasSuffix("_new") { continue }
            created.insert(table)
        }
        created.remove("schema_version")
        #expect(created.count > 10, "no CREATE TABLE read in Repository+Schema.swift")
        #expect(created == Set(Self.owners.keys), "created but not owned: \(created.subtracting(Self.owners.keys))")
    }

    /// The repository takes and returns its own model types (`Model/`); the server maps them onto
    /// the API's wire types in one place (`BacklotServer/Wire/`). Of `API` it uses only the limits
    /// both sides check and the audit trail's vocabulary.
    @Test func theRepositorySpeaksItsModelNotTheWire() throws {
        let sources = URL(fileURLWithPath: Self.folder).deletingLastPathComponent().path
        let enumerator = try #require(FileManager.default.enumerator(atPath: sources))
        var checked = 0
        for case let relative as String in enumerator where relative.hasSuffix(".swift") {
            let text = try String(contentsOfFile: sources + "/" + relative, encoding: .utf8)
            checked += 1
            for (n, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated()
            where !line.trimmingCharacters(in: .whitespaces).hasPrefix("//") {
                for match in line.matches(of: /\bAPI\.([A-Z][A-Za-z]*)/)
                where !["Limits", "AuditAction", "AuditDetail"].contains(String(match.output.1)) {
                    Issue.record("\(relative):\(n + 1) uses the wire type API.\(match.output.1)")
                }
            }
        }
        #expect(checked > 30, "no sources in \(sources)")
    }
}
