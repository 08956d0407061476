import BacklotAppleArchive
import BacklotBasics
import BacklotFormat
import Foundation

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

    /// `inspect X.aar [--files]`. The listing (`--files`, `--json`) is printed only once the
    /// whole archive has been read and checked, from what the read rendered while it went, up to
    /// `listingBudget` bytes; past that (an archive of a million tiny entries lists hundreds of
    /// megabytes) the archive is read a second time, through the same open file, and each entry
    /// printed as it comes: the listing's memory stays within the budget whatever the number of
    /// entries (the check itself holds every path, at most 64 MiB of them).
    static func inspect(
        _ path: String, files: Bool, json: Bool, io: any CommandIO, listingBudget: Int = 16 << 20
    ) throws {
        // One open file for both reads: a file renamed over it meanwhile is not read.
        let file = try AppleArchiveFile(path: path)
        let size = file.size
        let render: ((AppleArchiveEntry) throws -> String?)?
        if json {
            let encoder = CommandJSON.encoder()
            render = { try jsonPiece($0, encoder: encoder) }
        } else if files {
            render = { textLine($0) }
        } else {
            render = nil
        }
        var listing = ListingBuffer(budget: listingBudget)
        let summary = try AppleArchiveReader(file, name: path).readAll { entry in
            // Rendered while the budget holds; past it, only in the second read.
            if let render, listing.kept != nil, let piece = try render(entry) { listing.add(piece) }
            return nil
        }
        // After the check. The second read prints as it goes: the file was checked, and one
        // changed since fails that read, after a part of the listing.
        func list(_ out: (String) -> Void) throws {
            guard let render else { return }
            if let kept = listing.kept { return kept.forEach(out) }
            _ = try AppleArchiveReader(file, name: path).readAll { entry in
                if let piece = try render(entry) { out(piece) }
                return nil
            }
        }
        // Written in batches of about 256 KiB.
        var pending = ""
        func write(_ piece: String) {
            pending += piece
            if pending.utf8.count >= 256 << 10 {
                io.out(pending)
                pending = ""
            }
        }
        if json {
            // The document with no entry, then the entries in its place, as one encoding of the
            // whole would lay them out (``jsonPiece(_:encoder:)``).
            let empty = try CommandJSON.text(
                InspectOutput(
                    format: "aar", path: path, archiveBytes: size, compression: summary.compression,
                    blockSize: summary.blockSize, blockCount: summary.blocks, plainBytes: summary.plainSize,
                    installBytes: summary.installSize, entryCount: summary.entryCount, fileCount: summary.files,
                    entries: []))
            let marker = "\n  \"entries\": []"
            guard let at = empty.range(of: marker), summary.entryCount > 0 else { return io.out(empty) }
            write(String(empty[..<at.lowerBound]) + "\n  \"entries\": [\n")
            var first = true
            try list { piece in
                write(first ? piece : ",\n" + piece)
                first = false
            }
            io.out(pending + "\n  ]" + String(empty[at.upperBound...]))
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
        write(text)
        try list(write)
        io.out(pending)
    }

    /// An entry's line of `inspect --files` (nil for the metadata entry and the root folder).
    static func textLine(_ entry: AppleArchiveEntry) -> String? {
        guard entry.kind != .metadata, !entry.path.isEmpty else { return nil }
        let size = entry.kind == .file ? ByteCount.format(entry.dataSize) : entry.kind.name
        return "  " + (entry.mode.map { String($0, radix: 8) } ?? "---") + "  " + size
            + String(repeating: " ", count: max(0, 10 - size.count)) + "  " + TerminalText.quoted(entry.path)
            + (entry.linkTarget.map { " -> " + TerminalText.quoted($0) } ?? "") + "\n"
    }

    /// An entry of `inspect --json`'s `entries`, laid out as in the whole document (each line
    /// indented two levels), without the separator. `encoder` is ``CommandJSON/encoder()``'s.
    static func jsonPiece(_ entry: AppleArchiveEntry, encoder: JSONEncoder) throws -> String {
        let object = try encoder.encode(
            InspectOutput.Entry(
                type: entry.kind.name, path: entry.path, bytes: entry.dataSize,
                mode: entry.mode.map { String($0, radix: 8) }, fields: entry.fields, link: entry.linkTarget))
        // Every line indented: a newline in the layout is one between lines (in strings it is escaped).
        var indented = Array("    ".utf8)
        indented.reserveCapacity(object.count + 64)
        for byte in CommandJSON.houseLayout(Array(object)).utf8 {
            indented.append(byte)
            if byte == UInt8(ascii: "\n") { indented += Array("    ".utf8) }
        }
        return String(decoding: indented, as: UTF8.self)
    }

    /// The pieces of a listing rendered during a read, while they add up to at most `budget`
    /// bytes; past it, none (``kept`` is nil) and the listing is read again.
    struct ListingBuffer {
        let budget: Int
        private(set) var kept: [String]? = []
        private var bytes = 0

        init(budget: Int) { self.budget = budget }

        mutating func add(_ piece: String) {
            guard kept != nil else { return }
            bytes += piece.utf8.count
            if bytes > budget { kept = nil } else { kept?.append(piece) }
        }
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
