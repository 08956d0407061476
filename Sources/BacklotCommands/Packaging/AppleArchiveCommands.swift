import BacklotAppleArchive
import BacklotBasics
import BacklotFormat

/// `verify`, `inspect` and `extract` of an Apple Archive (`.aar`): what they do for a pack, for the
/// archives `ba-package` writes (docs/format.md §13). A file is taken as an Apple Archive by its
/// first bytes (`AA01`, `YAA1` or `pbz`), whatever its name.
enum AppleArchiveCommands {
    /// Whether the file at `path` starts as an Apple Archive does.
    static func isAppleArchive(_ path: String) -> Bool {
        guard let fd = try? FileDescriptor.openForReading(path) else { return false }
        defer { fd.close() }
        guard let head = try? fd.read(count: 4, at: 0), head.count == 4 else { return false }
        return head == Array("AA01".utf8) || head == Array("YAA1".utf8) || head.starts(with: Array("pbz".utf8))
    }

    static func reader(_ path: String) throws -> AppleArchiveReader {
        try AppleArchiveReader(AppleArchiveFile(path: path), name: path)
    }

    /// `verify X.aar`: every block and entry read and checked.
    static func verify(_ path: String, json: Bool, io: any CommandIO) throws {
        let summary = try reader(path).readAll { _ in nil }
        if json {
            try io.outJSON(
                VerifyOutput(
                    ok: true, path: path, format: "aar", compression: summary.compression, blockCount: summary.blocks,
                    entryCount: summary.entryCount, fileCount: summary.files, installBytes: summary.installSize))
            return
        }
        io.out(
            "OK \(path): Apple Archive (\(summary.compression)\(summary.blocks > 0 ? ", \(summary.blocks) block\(summary.blocks == 1 ? "" : "s")" : "")), \(summary.files) files, \(summary.directories) folders, \(ByteCount.format(summary.installSize)) installed\n"
        )
    }

    /// `inspect X.aar [--files]`.
    static func inspect(_ path: String, files: Bool, json: Bool, io: any CommandIO) throws {
        let size = try AppleArchiveFile(path: path).size
        let summary = try reader(path).readAll(keepingEntries: files || json) { _ in nil }
        if json {
            try io.outJSON(
                InspectOutput(
                    format: "aar", path: path, archiveBytes: size, compression: summary.compression,
                    blockSize: summary.blockSize, blockCount: summary.blocks, plainBytes: summary.plainSize,
                    installBytes: summary.installSize, entryCount: summary.entryCount, fileCount: summary.files,
                    entries: summary.entries.map {
                        .init(
                            type: $0.kind.name, path: $0.path, bytes: $0.dataSize,
                            mode: $0.mode.map { String($0, radix: 8) }, fields: $0.fields, link: $0.linkTarget)
                    }))
            return
        }
        var text = """
            \(path)  (Apple Archive)
              compression   \(summary.compression)\(summary.blocks > 0 ? " (\(summary.blocks) blocks of up to \(ByteCount.format(summary.blockSize)))" : "")
              archive size  \(ByteCount.format(size)) (\(size))
              install size  \(ByteCount.format(summary.installSize)) (\(summary.installSize))
              entries       \(summary.entryCount): \(summary.files) files, \(summary.directories) folders\(summary.links > 0 ? ", \(summary.links) links" : "")

            """
        if let first = summary.firstFile {
            text += "  fields        \(first.fields.joined(separator: " ")) (the first file's)\n"
        }
        guard files else {
            if summary.files > 0 { text += "  (list them with --files)\n" }
            io.out(text)
            return
        }
        for entry in summary.entries where entry.kind != .metadata && !entry.path.isEmpty {
            let size = entry.kind == .file ? ByteCount.format(entry.dataSize) : entry.kind.name
            text +=
                "  " + (entry.mode.map { String($0, radix: 8) } ?? "---") + "  " + size
                + String(repeating: " ", count: max(0, 10 - size.count)) + "  " + TerminalText.quoted(entry.path)
                + (entry.linkTarget.map { " -> " + TerminalText.quoted($0) } ?? "") + "\n"
        }
        io.out(text)
    }

    /// `extract X.aar -o DIR`.
    static func extract(_ path: String, to output: String, json: Bool, io: any CommandIO) throws {
        let summary = try AppleArchiveExtractor(reader(path)).extract(to: output)
        if json {
            try io.outJSON(
                ExtractOutput(
                    format: "aar", output: output, fileCount: summary.files, installBytes: summary.installSize))
            return
        }
        io.out("Extracted \(summary.files) files (\(ByteCount.format(summary.installSize))) of \(path) to \(output)\n")
    }

    struct VerifyOutput: Encodable {
        let ok: Bool
        let path: String
        let format: String
        let compression: String
        let blockCount: Int
        let entryCount: Int
        let fileCount: Int
        let installBytes: UInt64
    }

    struct InspectOutput: Encodable {
        struct Entry: Encodable {
            let type: String
            let path: String
            let bytes: UInt64
            let mode: String?
            let fields: [String]
            let link: String?
        }
        let format: String
        let path: String
        let archiveBytes: UInt64
        let compression: String
        let blockSize: UInt64
        let blockCount: Int
        let plainBytes: UInt64
        let installBytes: UInt64
        let entryCount: Int
        let fileCount: Int
        let entries: [Entry]
    }

    struct ExtractOutput: Encodable {
        let format: String
        let output: String
        let fileCount: Int
        let installBytes: UInt64
    }
}
