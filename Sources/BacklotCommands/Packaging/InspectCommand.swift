import BacklotBasics
import BacklotFormat
import BacklotJSON

/// `backlot inspect PACK`: shows a pack's manifest, digest and sizes, and with `--files` its files.
///
/// The summary is proportional to nothing but the header: a pack of 50,000 files prints the same
/// dozen lines as one of 5 (`--files` lists them, `--json` gives everything to a program).
struct InspectCommand: Command {
    static let spec = CommandSpec(
        name: "inspect",
        summary: "Show a pack's manifest, digest and sizes (header and index are checked, contents are not).",
        discussion: "Files are listed with --files (mode, size, path, one a line); --json always includes them.",
        arguments: [.init("PACK", help: "A .pack or an Apple Archive (.aar) file.")],
        options: [files, jsonFlag])
    static let files = Flag("files", help: "List every file.")

    static func run(_ arguments: ParsedArguments, io: any CommandIO) throws {
        if AppleArchiveCommands.isAppleArchive(arguments.positionals[0]) {
            try AppleArchiveCommands.inspect(
                arguments.positionals[0], files: arguments[files], json: arguments[jsonFlag], io: io)
            return
        }
        let pack = try PackReader(path: arguments.positionals[0])
        let index = pack.index
        let m = index.metadata
        let installs = try m.variants == nil ? [] : index.installs(source: pack.path)
        if arguments[jsonFlag] {
            try io.outJSON(
                Output(
                    formatVersion: pack.header.formatVersion, pack: m.assetPackID.rawValue, digest: pack.packDigest.hex,
                    manifest: m.json, packBytes: pack.fileSize, installBytes: index.installSize,
                    index: .init(
                        offset: pack.header.indexOffset, length: pack.header.indexLength, sha256: pack.packDigest.hex),
                    chunking: index.chunking.map { .init(min: $0.minimum, avg: $0.average, max: $0.maximum) },
                    dictionary: index.dictionary.map { .init(bytes: $0.bytes.count, id: $0.id) },
                    chunkCount: index.chunks.count, fileCount: index.files.count,
                    variants: m.variants == nil
                        ? nil
                        : installs.map {
                            .init(
                                textureFormat: $0.choice.textureFormat, deviceTier: $0.choice.deviceTier,
                                fileCount: $0.files, installBytes: $0.bytes)
                        },
                    files: index.files.map {
                        .init(
                            path: $0.path, bytes: $0.size, mode: String($0.mode, radix: 8), sha256: $0.digest.hex,
                            chunks: Array($0.chunks))
                    }))
            return
        }
        let events = m.downloadPolicy.installationEventTypes.map(\.rawValue).joined(separator: ", ")
        var text = """
            \(m.assetPackID)  (\(pack.path))
              policy        \(m.downloadPolicy.name)\(events.isEmpty ? "" : " on \(events)")
              platforms     \(m.platforms.map(\.rawValue).joined(separator: ", "))

            """
        if let language = m.language { text += "  language      \(language)\n" }
        if let userInfo = m.userInfo { text += "  userInfo      \(userInfo.serialized())\n" }
        if let v = m.variants {
            var dimensions: [String] = []
            if let d = v.defaultTextureFormat {
                dimensions.append("textureFormat \(v.textureFormats.joined(separator: ", ")) (default \(d))")
            }
            if !v.deviceTiers.isEmpty {
                dimensions.append("deviceTier \(v.deviceTiers.map(String.init).joined(separator: ", "))")
            }
            text += "  variants      \(dimensions.joined(separator: "; "))\n"
            for row in installs {
                text += "    \(row.choice): \(row.files) files, \(ByteCount.format(row.bytes)) installed\n"
            }
        }
        text += """
              pack digest   \(pack.packDigest)
              format        version \(pack.header.formatVersion)
              pack size     \(ByteCount.format(pack.fileSize)) (\(pack.fileSize))
              install size  \(ByteCount.format(index.installSize)) (\(index.installSize))
              index         \(pack.header.indexLength) bytes at offset \(pack.header.indexOffset)
              chunks        \(index.chunks.count)\(index.chunking.map { " (avg \($0.average >> 10) KiB)" } ?? "")
              files         \(index.files.count)

            """
        if let d = index.dictionary {
            text += "  dictionary    \(ByteCount.format(UInt64(d.bytes.count))) (zstd dictionary \(d.id))\n"
        }
        guard arguments[files] else {
            if !index.files.isEmpty { text += "  (list them with --files)\n" }
            io.out(text)
            return
        }
        for f in index.files {
            let size = ByteCount.format(f.size)
            text +=
                "  " + String(f.mode, radix: 8) + "  " + size + String(repeating: " ", count: max(0, 10 - size.count))
                + "  " + TerminalText.quoted(f.path) + "\n"
        }
        io.out(text)
    }
}

extension InspectCommand {
    /// `inspect --json` (docs/json.md); `chunking` only for a chunked pack.
    struct Output: Encodable {
        struct Index: Encodable {
            let offset: UInt64
            let length: UInt64
            let sha256: String
        }
        struct Chunking: Encodable {
            let min: Int
            let avg: Int
            let max: Int
        }
        struct Dictionary: Encodable {
            let bytes: Int
            let id: UInt32
        }
        struct File: Encodable {
            let path: String
            let bytes: UInt64
            let mode: String
            let sha256: String
            let chunks: [Int]
        }
        let formatVersion: UInt16
        let pack: String
        let digest: String
        let manifest: JSONNode
        let packBytes: UInt64
        let installBytes: UInt64
        let index: Index
        let chunking: Chunking?
        let dictionary: Dictionary?
        /// What each device installs, one row per choice of the pack's variants (nil without).
        struct Variant: Encodable {
            let textureFormat: String?
            let deviceTier: Int?
            let fileCount: Int
            let installBytes: UInt64
        }
        let chunkCount: Int
        let fileCount: Int
        let variants: [Variant]?
        let files: [File]
    }
}
