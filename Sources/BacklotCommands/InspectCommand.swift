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
        arguments: [.init("PACK", help: "A .pack file.")],
        options: [files, jsonFlag])
    static let files = Flag("files", help: "List every file.")

    static func run(_ arguments: ParsedArguments, io: any CommandIO) throws {
        let pack = try PackReader(path: arguments.positionals[0])
        let index = pack.index
        let m = index.metadata
        if arguments[jsonFlag] {
            var members: [JSONMember] = [
                JSONMember(key: "formatVersion", value: .number(pack.header.formatVersion)),
                JSONMember(key: "pack", value: .string(m.assetPackID.rawValue)),
                JSONMember(key: "digest", value: .string(pack.packDigest.hex)),
                JSONMember(key: "manifest", value: m.json),
                JSONMember(key: "packBytes", value: .number(pack.fileSize)),
                JSONMember(key: "installBytes", value: .number(index.installSize)),
                JSONMember(
                    key: "index",
                    value: .object([
                        "offset": .number(pack.header.indexOffset), "length": .number(pack.header.indexLength),
                        "sha256": .string(pack.packDigest.hex),
                    ])),
            ]
            if let c = index.chunking {
                members.append(
                    JSONMember(
                        key: "chunking",
                        value: .object([
                            "min": .number(c.minimum), "avg": .number(c.average), "max": .number(c.maximum),
                        ])))
            }
            members.append(JSONMember(key: "chunkCount", value: .number(index.chunks.count)))
            members.append(JSONMember(key: "fileCount", value: .number(index.files.count)))
            members.append(
                JSONMember(
                    key: "files",
                    value: .array(
                        index.files.map { f in
                            .object([
                                "path": .string(f.path), "bytes": .number(f.size),
                                "mode": .string(String(f.mode, radix: 8)),
                                "sha256": .string(f.digest.hex), "chunks": .array(f.chunks.map { .number($0) }),
                            ])
                        })))
            io.out(JSONNode(.object(members)).prettyPrinted() + "\n")
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
        text += """
              pack digest   \(pack.packDigest)
              format        version \(pack.header.formatVersion)
              pack size     \(ByteCount.format(pack.fileSize)) (\(pack.fileSize))
              install size  \(ByteCount.format(index.installSize)) (\(index.installSize))
              index         \(pack.header.indexLength) bytes at offset \(pack.header.indexOffset)
              chunks        \(index.chunks.count)\(index.chunking.map { " (avg \($0.average >> 10) KiB)" } ?? "")
              files         \(index.files.count)

            """
        guard arguments[files] else {
            if !index.files.isEmpty { text += "  (list them with --files)\n" }
            io.out(text)
            return
        }
        for f in index.files {
            let size = ByteCount.format(f.size)
            text +=
                "  " + String(f.mode, radix: 8) + "  " + size + String(repeating: " ", count: max(0, 10 - size.count))
                + "  " + f.path + "\n"
        }
        io.out(text)
    }
}
