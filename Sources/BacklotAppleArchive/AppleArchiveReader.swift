import BacklotBasics
import BacklotCodecs
import BacklotCrypto
import BacklotFormat

/// Reads an Apple Archive (`.aar`) completely, front to back, in bounded memory: every block
/// decompressed to exactly its declared size, every entry's header parsed field by field, every
/// path checked by the byte rules of pack paths, every file's data read and checked against the
/// `SIZ`, `CKS` and `SH2` its header states (docs/format.md §13).
///
/// ```swift
/// var reader = try AppleArchiveReader(AppleArchiveFile(path: "Tutorial.aar"), name: "Tutorial.aar")
/// let summary = try reader.readAll { entry in nil }   // verify: read and check every byte
/// print(summary.files, summary.installSize)
/// ```
public struct AppleArchiveReader {
    /// What one entry's data is handed to (``readAll(_:)``): `write` with each piece, then
    /// `finish` once the data is whole and checked.
    public struct DataSink {
        public var write: (UnsafeRawBufferPointer) throws -> Void
        public var finish: () throws -> Void

        public init(write: @escaping (UnsafeRawBufferPointer) throws -> Void, finish: @escaping () throws -> Void) {
            self.write = write
            self.finish = finish
        }
    }

    /// What a whole read found.
    public struct Summary: Sendable, Hashable {
        /// The files' paths, in archive order.
        public var filePaths: [String] = []
        /// The first file's entry (its fields show what the packager writes).
        public var firstFile: AppleArchiveEntry?
        /// How many entries the archive holds.
        public var entryCount = 0
        public var files = 0
        public var directories = 0
        public var links = 0
        /// The files' bytes: what the archive installs (App Store Connect's install size).
        public var installSize: UInt64 = 0
        /// `none`, `lzfse`, `zlib`, `lzma`, `lz4`.
        public var compression = "none"
        public var blockSize: UInt64 = 0
        public var blocks = 0
        /// The plain (decompressed) stream's length.
        public var plainSize: UInt64 = 0
    }

    /// The plain (decompressed) stream's length, known once the block headers are read: an upper
    /// bound of what extracting writes.
    public var plainSize: UInt64 { stream.plainSize }

    /// Limits, as a pack's (docs/format.md §10): entries, path bytes, one path.
    public enum Limits {
        public static let entries = 1 << 20
        public static let pathBytes = 64 << 20
        /// Apple's readers refuse a path of 1024 bytes or more.
        public static let path = 1023
        /// Fields in one entry's header (Apple's tools write about a dozen; the keys are 36³ at most).
        public static let fields = 64
    }

    let stream: AppleArchiveStream
    let name: String

    /// Opens `source`: the compression header and every block's sizes are checked now.
    /// - Throws: ``BacklotError/Code/corruptArchive`` naming what is wrong and where.
    public init(_ source: any AppleArchiveSource, name: String) throws {
        stream = try AppleArchiveStream(source, name: name)
        self.name = name
    }

    /// Reads every entry, checks it, and hands each file's data to the sink `body` returns for it
    /// (nil: read and checked, not kept). `body` sees each entry before its data is read and
    /// checked: what it learns is trusted only once the whole read has returned. The summary keeps
    /// counts and the files' paths (bounded by ``Limits``), never the entries.
    /// - Throws: ``BacklotError/Code/corruptArchive`` naming the entry and the offset: a damaged
    ///   block, an entry that is cut short, a field of an unknown type, a path that is not a safe
    ///   relative UTF-8 path or names an entry twice, a special file, data of another size or
    ///   checksum than the header states; what `body` and its sinks throw.
    /// - Parameters:
    ///   - maximumInstallSize: refuse the archive as soon as its files add up to more (before
    ///     their data is read): what a server accepts.
    public func readAll(
        maximumInstallSize: UInt64? = nil,
        _ body: (AppleArchiveEntry) throws -> DataSink?
    ) throws -> Summary {
        var summary = Summary()
        summary.compression = stream.compressionName
        summary.blockSize = stream.blockSize
        summary.blocks = stream.blocks.count
        summary.plainSize = stream.plainSize
        // Every path, and whether a file or link (which no other path may go through) holds it:
        // checked once all are read, by byte order (duplicates and a file where a folder is needed).
        var tree: [(path: String, isLeaf: Bool)] = []
        var entries = 0
        var pathBytes = 0
        var otherBlobBytes: UInt64 = 0
        while stream.remaining > 0 {
            let offset = stream.position
            func bad(_ message: String, _ path: String? = nil) -> BacklotError {
                BacklotError(
                    .corruptArchive,
                    "not a sound Apple Archive: \(path.map { "entry \"\(TerminalText.escaped($0))\": " } ?? "")\(message)",
                    context: "\(name) at plain offset \(offset)",
                    hint: "the archive is damaged or was not made by Apple's tools: make it again")
            }
            guard entries < Limits.entries else {
                throw bad("more than \(Limits.entries) entries (the limit of a pack)")
            }
            var entry = try readHeader(at: offset, bad: bad)
            let path = entry.path
            // Paths by the pack rules: UTF-8, relative, no empty, "." or ".." component, no NUL or "\".
            if !(path.isEmpty && entry.kind == .directory) {
                guard path.utf8.count <= Limits.path else {
                    throw bad("the path is \(path.utf8.count) bytes long", path)
                }
                guard SelectorPath.isNormalFilePath(path.utf8) else {
                    throw bad("the path is not a safe relative path (docs/format.md §3)", path)
                }
            }
            pathBytes += path.utf8.count
            guard pathBytes <= Limits.pathBytes else { throw bad("the paths add up to more than 64 MiB") }
            entries += 1
            if entry.kind != .metadata { tree.append((path, entry.kind != .directory)) }
            switch entry.kind {
            case .file:
                summary.files += 1
                summary.installSize = CheckedInteger.saturatingAdd(summary.installSize, entry.dataSize)
                if let maximumInstallSize, summary.installSize > maximumInstallSize {
                    throw bad(
                        "the files add up to more than \(maximumInstallSize) bytes, the install-size limit (before this file's data is read)",
                        path)
                }
            case .directory:
                summary.directories += 1
            case .symbolicLink:
                // By bytes: "/" followed by a combining mark is one Character, which `hasPrefix("/")` misses.
                guard let target = entry.linkTarget, !target.isEmpty, target.utf8.first != UInt8(ascii: "/"),
                    !BytePath.components(target).contains(where: { BytePath.isDotDot($0) })
                else { throw bad("a link that leaves the archive (\(entry.linkTarget ?? "no target"))", path) }
                summary.links += 1
            case .metadata:
                break
            default:
                throw bad("a \(entry.kind.name): an asset pack holds only files, folders and links", path)
            }
            if entry.kind != .file, entry.dataSize > 0 { throw bad("a \(entry.kind.name) with data", path) }
            // Blobs other than DAT (extended attributes, ACLs) are decompressed to be read past, on
            // any entry: they count against the limit too, or a small archive could make a server
            // decompress far more than it accepts.
            otherBlobBytes = blobs.sizes.reduce(otherBlobBytes) {
                $1.key == "DAT" ? $0 : CheckedInteger.saturatingAdd($0, $1.size)
            }
            if let maximumInstallSize,
                CheckedInteger.saturatingAdd(summary.installSize, otherBlobBytes) > maximumInstallSize
            {
                throw bad(
                    "the files and the other blobs (extended attributes, ACLs) add up to more than \(maximumInstallSize) bytes, the install-size limit",
                    path)
            }
            if let declared = entry.declaredSize, declared != entry.dataSize {
                throw bad("SIZ says \(declared) bytes, but its data is \(entry.dataSize)", path)
            }
            let sink = try body(entry)
            var crc: UInt32 = 0
            var sha = SHA256()
            try stream.forEach(entry.dataSize) { piece in
                if entry.crc32 != nil { crc = Zlib.crc32(piece, continuing: crc) }
                if entry.sha256 != nil { sha.update(piece) }
                try sink?.write(piece)
            }
            if let expected = entry.crc32, expected != crc {
                throw bad("the data's CRC-32 is \(hex32(crc)), but CKS says \(hex32(expected))", path)
            }
            if let expected = entry.sha256, expected != sha.finalize() {
                throw bad("the data's SHA-256 is not the one SH2 states", path)
            }
            try skipOtherBlobs(&entry, bad: bad)
            try sink?.finish()
            if entry.kind == .file {
                summary.filePaths.append(path)
                if summary.firstFile == nil { summary.firstFile = entry }
            }
        }
        summary.entryCount = entries
        try checkTree(tree)
        return summary
    }

    /// Refuses two entries at one path, and a file or link where another entry needs a folder
    /// (in either order in the archive), by byte order: time follows the paths' bytes.
    private func checkTree(_ tree: [(path: String, isLeaf: Bool)]) throws {
        func bytes(_ i: Int) -> String.UTF8View { tree[i].path.utf8 }
        let order = tree.indices.sorted { bytes($0).lexicographicallyPrecedes(bytes($1)) }
        // Earlier paths that are byte prefixes of the current one, by their length.
        var prefixes: [Int] = []
        var leafAt: [Int: Int] = [:]
        for (n, i) in order.enumerated() {
            let current = bytes(i)
            if n > 0, current.elementsEqual(bytes(order[n - 1])) {
                throw BacklotError(
                    .corruptArchive,
                    "not a sound Apple Archive: two entries with the path \"\(TerminalText.escaped(tree[i].path))\"",
                    context: name, hint: "the archive is damaged or crafted: make it again")
            }
            while let top = prefixes.last, !current.starts(with: bytes(top)) {
                prefixes.removeLast()
                if tree[top].isLeaf { leafAt[bytes(top).count] = nil }
            }
            var at = 0
            for byte in current {
                if byte == BytePath.separator, let leaf = leafAt[at] {
                    throw BacklotError(
                        .corruptArchive,
                        "not a sound Apple Archive: \"\(TerminalText.escaped(tree[leaf].path))\" is a file or link, but \"\(TerminalText.escaped(tree[i].path))\" needs it to be a folder",
                        context: name, hint: "the archive is damaged or crafted: make it again")
                }
                at += 1
            }
            prefixes.append(i)
            if tree[i].isLeaf { leafAt[current.count] = i }
        }
    }

    private func hex32(_ value: UInt32) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 8 - digits.count) + digits
    }

    /// Blob sizes by key, of the entry being read (its `DAT` is read by ``readAll(_:)``).
    private final class Blobs {
        var sizes: [(key: String, size: UInt64)] = []
    }

    private let blobs = Blobs()

    /// Parses the header of the entry at `offset`.
    private func readHeader(at offset: UInt64, bad: (String, String?) -> BacklotError) throws -> AppleArchiveEntry {
        let start = try stream.read(6, what: "an entry's header")
        let magic = String(decoding: start[0..<4], as: UTF8.self)
        guard magic == "AA01" || magic == "YAA1" else {
            throw bad(
                "no entry starts here (AA01 expected, found \(start[0..<4].map { String($0, radix: 16) }.joined(separator: " ")))",
                nil)
        }
        let length = Int(start[4]) | Int(start[5]) << 8
        guard length >= 6 else { throw bad("the header length \(length) is less than its own 6 bytes", nil) }
        let header = try stream.read(length - 6, what: "an entry's header")
        var at = 0
        var kind: AppleArchiveEntry.Kind?
        var path: String?
        var link: String?
        var mode: UInt16?
        var declared: UInt64?
        var crc: UInt32?
        var sha: SHA256Digest?
        var fields: [String] = []
        var keys = Set<String>()
        blobs.sizes = []
        func take(_ count: Int, _ what: String) throws -> ArraySlice<UInt8> {
            guard count <= header.count - at else { throw bad("the field \(what) runs past the header's end", path) }
            defer { at += count }
            return header[at..<at + count]
        }
        func little(_ bytes: ArraySlice<UInt8>) -> UInt64 {
            bytes.reversed().reduce(0) { $0 << 8 | UInt64($1) }
        }
        while at < header.count {
            let keyBytes = try take(4, "key")
            let key = String(decoding: keyBytes.prefix(3), as: UTF8.self)
            let subtype = keyBytes.last!
            guard keyBytes.prefix(3).allSatisfy({ (0x41...0x5A).contains($0) || (0x30...0x39).contains($0) }) else {
                throw bad("a field key that is not three capitals or digits", path)
            }
            let field = key + String(decoding: [subtype], as: UTF8.self)
            guard keys.insert(key).inserted else { throw bad("the field \(key) twice", path) }
            guard keys.count <= Limits.fields else {
                throw bad("more than \(Limits.fields) fields in one header", path)
            }
            fields.append(field)
            switch subtype {
            case UInt8(ascii: "*"):
                break
            case UInt8(ascii: "1"), UInt8(ascii: "2"), UInt8(ascii: "4"), UInt8(ascii: "8"):
                let value = little(try take(Int(subtype - 0x30), field))
                switch key {
                case "TYP":
                    guard let k = AppleArchiveEntry.Kind(rawValue: UInt8(truncatingIfNeeded: value)), value <= 0xFF
                    else {
                        throw bad("the entry type \(value) is unknown", path)
                    }
                    kind = k
                case "MOD": mode = UInt16(truncatingIfNeeded: value & 0o7777)
                case "SIZ": declared = value
                default: break
                }
            case UInt8(ascii: "P"):
                let length = Int(little(try take(2, field)))
                let bytes = try take(length, field)
                guard let text = String(validating: bytes, as: UTF8.self) else {
                    throw bad("the field \(key) is not UTF-8", path)
                }
                if key == "PAT" { path = text } else if key == "LNK" { link = text }
            case UInt8(ascii: "F"), UInt8(ascii: "G"), UInt8(ascii: "H"), UInt8(ascii: "I"), UInt8(ascii: "J"):
                let size = [
                    UInt8(ascii: "F"): 4, UInt8(ascii: "G"): 20, UInt8(ascii: "H"): 32, UInt8(ascii: "I"): 48,
                    UInt8(ascii: "J"): 64,
                ][subtype]!
                let value = try take(size, field)
                if key == "CKS", size == 4 { crc = UInt32(truncatingIfNeeded: little(value)) }
                if key == "SH2", size == 32 { sha = SHA256Digest(bytes: Array(value)) }
            case UInt8(ascii: "S"), UInt8(ascii: "T"):
                _ = try take(subtype == UInt8(ascii: "S") ? 8 : 12, field)
            case UInt8(ascii: "A"), UInt8(ascii: "B"), UInt8(ascii: "C"):
                let size = little(
                    try take([UInt8(ascii: "A"): 2, UInt8(ascii: "B"): 4, UInt8(ascii: "C"): 8][subtype]!, field))
                blobs.sizes.append((key, size))
            default:
                throw bad("the field \(key) has the unknown type '\(String(decoding: [subtype], as: UTF8.self))'", path)
            }
        }
        guard let kind else { throw bad("the header has no TYP", path) }
        guard let path else { throw bad("the header has no PAT", nil) }
        let data = blobs.sizes.first { $0.key == "DAT" }?.size ?? 0
        // Every blob's bytes must be in the archive: a declared size far beyond it is refused
        // before anything is read.
        let blobTotal = blobs.sizes.reduce(UInt64(0)) { CheckedInteger.saturatingAdd($0, $1.size) }
        guard blobTotal <= stream.remaining else {
            throw bad(
                "its data (\(blobTotal) bytes) runs past the archive's end (\(stream.remaining) bytes left)", path)
        }
        return AppleArchiveEntry(
            kind: kind, path: path, linkTarget: link, mode: mode, declaredSize: declared, dataSize: data,
            crc32: crc, sha256: sha, fields: fields, offset: offset)
    }

    /// Reads past the blobs other than `DAT` (extended attributes, ACLs), in field order around it.
    private func skipOtherBlobs(_ entry: inout AppleArchiveEntry, bad: (String, String?) -> BacklotError) throws {
        // DAT was read where it stands; blobs before it would have had to come first.
        guard let datIndex = blobs.sizes.firstIndex(where: { $0.key == "DAT" }) else {
            for blob in blobs.sizes { try stream.forEach(blob.size) { _ in } }
            return
        }
        guard datIndex == 0 || blobs.sizes[..<datIndex].allSatisfy({ $0.size == 0 }) else {
            throw bad("blobs before DAT are not read by this reader (XAT or ACL first)", entry.path)
        }
        for blob in blobs.sizes[(datIndex + 1)...] { try stream.forEach(blob.size) { _ in } }
    }
}
