import BacklotBasics

/// The uncompressed size of an App Clip: every regular file of its bundle, from a directory
/// (the `.app` folder) or from an archive (`.zip`, `.ipa`, `.tar`), without extracting anything.
///
/// This is the size Apple limits (see ``AppClipSizeRule``): the sum of the files' uncompressed
/// sizes. Measure the thinned variant of the clip's main bundle (what Xcode's App Thinning Size
/// Report describes); Backlot does not thin.
///
/// What counts:
/// - **Directory**: every regular file below it, by its size (`lstat`). Symbolic links are not
///   followed and count 0 (they are not listed); sockets, FIFOs and devices count 0 too. A file
///   with several hard links counts once per path. The path itself may be a link to a directory.
/// - **ZIP** (`.zip`, `.ipa`): the central directory is read (ZIP64 included); every entry whose
///   name does not end in `/` counts its declared uncompressed size, except Unix symbolic links,
///   which count 0 like on disk. The archive must be in one piece (no split archives).
/// - **tar** (`.tar`, uncompressed): every regular file entry (type `0`, `7` or NUL) counts its
///   size; GNU long names (`L`) and pax `path`/`size` records are read; links and directories count 0.
///   A sparse file (GNU type `S`, or pax `GNU.sparse.*` 0.0, 0.1 and 1.0) counts its real,
///   expanded size, as extraction writes it.
///
/// Archive paths are resolved on bytes as extraction resolves them (`./x`, `//x` and `sub/../x`
/// are one path); an entry that climbs out of the root, and in an `.ipa` an absolute one or one
/// that climbs out of `Payload/NAME.app`, is refused.
///
/// Every declared size and offset is checked against the file's size before it is used; a
/// malformed archive is refused with ``BacklotError/Code/invalidInput`` naming the offset.
///
/// ```swift
/// let size = try AppClipSize(measuring: "build/Clip.app")
/// size.totalBytes                   // 12_345_678
/// size.largest(3).map(\.path)       // ["Clip", "Assets.car", "Frameworks/Kit.framework/Kit"]
/// ```
public struct AppClipSize: Sendable {
    /// What was measured.
    public enum Form: String, Sendable, Hashable {
        case directory, zip, tar
    }

    /// One regular file and its uncompressed size.
    public struct File: Sendable, Hashable {
        /// The path inside the clip (relative to the directory, or as the archive names it).
        public let path: String
        public let bytes: UInt64

        public init(path: String, bytes: UInt64) {
            self.path = path
            self.bytes = bytes
        }
    }

    /// The path that was measured.
    public let path: String
    public let form: Form
    /// The regular files, in byte order of their paths.
    public let files: [File]
    /// The sum of the files' sizes (saturating at `UInt64.max`; the readers refuse sums that overflow).
    public let totalBytes: UInt64

    /// A size from a list of files already known (tests, other readers).
    public init(path: String, form: Form, files: [File]) {
        self.path = path
        self.form = form
        self.files = files.sorted { $0.path.utf8.lexicographicallyPrecedes($1.path.utf8) }
        var total: UInt64 = 0
        for f in files {
            let (sum, overflow) = total.addingReportingOverflow(f.bytes)
            total = overflow ? UInt64.max : sum
        }
        totalBytes = total
    }

    /// Measures the clip at `path`: a directory, a `.zip`/`.ipa`, or a `.tar`.
    /// - Throws: ``BacklotError/Code/invalidInput`` when nothing is there, when it is none of the
    ///   accepted forms, or when the archive is malformed (the message names the offset);
    ///   ``BacklotError/Code/io`` when a directory or file can't be read.
    public init(measuring path: String) throws {
        do {
            try self.init(reading: path)
        } catch let e as BacklotError where e.code == .io || e.code == .corruptArchive {
            // The input could not be read as what it claims to be: invalid input (exit status 2), not a failure of the check.
            throw BacklotError(.invalidInput, e.message, context: e.context ?? path, hint: e.hint ?? Self.acceptedForms)
        }
    }

    /// Archive entries as an unpacked bundle has them: one file per path (the last entry wins, as
    /// when it is extracted), without macOS's `__MACOSX/` and `._*` AppleDouble companions, and in
    /// an `.ipa` only what is inside `Payload/NAME.app/` (not `Symbols/`, `SwiftSupport/`, `META-INF/`, iTunes metadata).
    ///
    /// Paths are resolved as extraction resolves them, on bytes and split on `/` only
    /// (``BytePath``): `./x`, `//x` and `sub/../x` are the one path `x`.
    /// - Throws: ``BacklotError/Code/invalidInput`` for an entry that climbs out of the archive's
    ///   root (`../x`), and in an `.ipa` for an absolute entry or one that climbs out of
    ///   `Payload/NAME.app` (`Payload/Clip.app/../../x`): such an entry is not part of the clip, and
    ///   an archive that holds one is not an App Clip an extraction would produce.
    static func asUnpacked(_ entries: [File], ipa: Bool, source: String = "") throws -> [File] {
        var byPath: [BytePath.Key: UInt64] = [:]
        var order: [BytePath.Key] = []
        for f in entries {
            let r = resolve(f.path)
            func refuse(_ why: String) -> BacklotError {
                BacklotError(
                    .invalidInput, "the entry \"\(f.path)\" \(why), so it is not part of the App Clip", context: source,
                    hint:
                        "rebuild the archive from the .app directory (for an .ipa, everything under Payload/NAME.app/)")
            }
            if r.escapes { throw refuse("climbs out of the archive's root") }
            if ipa, r.absolute { throw refuse("is an absolute path") }
            if ipa, r.leftApp { throw refuse("climbs out of the Payload/NAME.app folder") }
            let parts = r.components
            guard let last = parts.last else { continue }  // the root itself
            if BytePath.same(parts[0], "__MACOSX") || last.utf8.starts(with: "._".utf8) { continue }
            if ipa, !(parts.count >= 3 && isAppFolder(parts[0], parts[1])) { continue }
            let key = BytePath.Key(parts.joined(separator: "/"))
            if byPath[key] == nil { order.append(key) }
            byPath[key] = f.bytes
        }
        return order.map { File(path: $0.path, bytes: byPath[$0]!) }
    }

    /// Whether `first/second` is an `.ipa`'s `Payload/NAME.app` (byte comparisons).
    static func isAppFolder(_ first: String, _ second: String) -> Bool {
        BytePath.same(first, "Payload") && second.utf8.count > 4
            && second.utf8.reversed().starts(with: ".app".utf8.reversed())
    }

    /// An archive entry's path resolved as extraction resolves it: split on the byte `/` only,
    /// empty and `.` components dropped, `..` removing the one before.
    struct ResolvedPath {
        /// The components left, outermost first.
        var components: [String] = []
        /// It started with `/`.
        var absolute = false
        /// A `..` went above the root.
        var escapes = false
        /// It went into `Payload/NAME.app` and ended outside that folder.
        var leftApp = false
        var path: String { components.joined(separator: "/") }
    }

    static func resolve(_ raw: String) -> ResolvedPath {
        var r = ResolvedPath()
        r.absolute = raw.utf8.first == BytePath.separator
        var app: String? = nil  // the Payload/NAME.app folder the path went into
        for c in BytePath.components(raw, omittingEmpty: true) {
            if BytePath.isDot(c) { continue }
            if BytePath.isDotDot(c) {
                if r.components.isEmpty { r.escapes = true } else { r.components.removeLast() }
                continue
            }
            r.components.append(c)
            if app == nil, r.components.count == 2, isAppFolder(r.components[0], r.components[1]) {
                app = r.components[1]
            }
        }
        if let app {
            r.leftApp =
                !(r.components.count >= 2 && BytePath.same(r.components[0], "Payload")
                && BytePath.same(r.components[1], app))
        }
        return r
    }

    private init(reading path: String) throws {
        guard let status = try FileSystem.status(path) else {
            throw BacklotError(.invalidInput, "there is nothing at this path", context: path, hint: Self.acceptedForms)
        }
        if status.kind == .directory {
            let files = try Self.directoryFiles(path)
            self.init(path: path, form: .directory, files: files)
            return
        }
        guard status.kind == .regular else {
            throw BacklotError(
                .invalidInput, "this is \(status.kind.phrase), not an App Clip", context: path, hint: Self.acceptedForms
            )
        }
        let lower = path.lowercased()
        if lower.hasSuffix(".zip") || lower.hasSuffix(".ipa") {
            let files = try Self.asUnpacked(try Self.zipFiles(path), ipa: lower.hasSuffix(".ipa"), source: path)
            self.init(path: path, form: .zip, files: files)
        } else if lower.hasSuffix(".tar") {
            let files = try Self.asUnpacked(try Self.tarFiles(path), ipa: false, source: path)
            self.init(path: path, form: .tar, files: files)
        } else if [".tar.gz", ".tgz", ".tar.bz2", ".tar.xz", ".tar.zst", ".gz", ".xz", ".zst"].contains(where: {
            lower.hasSuffix($0)
        }) {
            throw BacklotError(
                .invalidInput, "compressed archives are not read", context: path,
                hint: "decompress it first (for example `gunzip -k` or `zstd -d`), or give the .app directory or a .zip"
            )
        } else {
            throw BacklotError(
                .invalidInput, "this file is not an archive Backlot can measure", context: path,
                hint: Self.acceptedForms)
        }
    }

    /// The `n` largest files, largest first (equal sizes in path order).
    public func largest(_ n: Int) -> [File] {
        let sorted = files.sorted { a, b in
            a.bytes != b.bytes ? a.bytes > b.bytes : a.path.utf8.lexicographicallyPrecedes(b.path.utf8)
        }
        return Array(sorted.prefix(max(0, n)))
    }

    static let acceptedForms =
        "give the App Clip's .app directory, a .zip or .ipa archive, or an uncompressed .tar archive"
}

/// An App Clip's size checked against the limit that applies: the size, the rule and its limit,
/// the headroom (or the overflow), and the largest files.
///
/// ```swift
/// let report = AppClipSizeReport(size: try AppClipSize(measuring: "Clip.app"), minimumOS: 17, invocations: .both, demoLink: false)
/// report.rule.id          // "ios17-physical"
/// report.headroomBytes    // 2_654_322, or negative when over
/// report.isOver           // false
/// ```
public struct AppClipSizeReport: Sendable {
    public let size: AppClipSize
    /// The major version of the clip's deployment target.
    public let minimumOS: Int
    public let invocations: AppClipInvocations
    public let demoLink: Bool
    /// The rule that chose the limit.
    public let rule: AppClipSizeRule
    /// The largest files, largest first.
    public let largestFiles: [AppClipSize.File]
    /// Asset packs counted with the clip (`clip size --pack`), each at its install size.
    public let packs: [Pack]

    /// An asset pack counted with the clip: for a pack with variants, the largest a device can install.
    public struct Pack: Sendable, Hashable {
        public let id: String
        /// The variant counted (`textureFormat=astc, deviceTier=2`), nil for a pack without variants.
        public let variant: String?
        public let bytes: UInt64

        public init(id: String, variant: String?, bytes: UInt64) {
            self.id = id
            self.variant = variant
            self.bytes = bytes
        }
    }

    public init(
        size: AppClipSize, minimumOS: Int, invocations: AppClipInvocations, demoLink: Bool, largestCount: Int = 10,
        packs: [Pack] = []
    ) {
        self.size = size
        self.packs = packs
        self.minimumOS = minimumOS
        self.invocations = invocations
        self.demoLink = demoLink
        rule = AppClipSizeRule.rule(minimumOS: minimumOS, invocations: invocations, demoLink: demoLink)
        largestFiles = size.largest(largestCount)
    }

    /// The clip's files and the packs counted with it.
    public var totalBytes: UInt64 {
        packs.reduce(size.totalBytes) { CheckedInteger.saturatingAdd($0, $1.bytes) }
    }
    public var limitBytes: UInt64 { rule.limitBytes }
    /// Over the limit: more than ``limitBytes`` (exactly the limit is within).
    public var isOver: Bool { !rule.allows(totalBytes) }
    /// The limit minus the size: the headroom when positive or zero, the overflow when negative
    /// (clamped to `Int64`'s range).
    public var headroomBytes: Int64 {
        totalBytes <= limitBytes ? Int64(clamping: limitBytes - totalBytes) : -Int64(clamping: totalBytes - limitBytes)
    }
    /// How many bytes over the limit (0 when within).
    public var overflowBytes: UInt64 { isOver ? totalBytes - limitBytes : 0 }
}

// MARK: - Directories

extension AppClipSize {
    /// Every regular file below `root`, links not followed.
    static func directoryFiles(_ root: String) throws -> [File] {
        var files: [File] = []
        var pending: [String] = [""]
        while let relative = pending.popLast() {
            let directory = relative.isEmpty ? root : root + "/" + relative
            for nameBytes in try FileSystem.entryNames(directory) {
                guard let name = String(validating: nameBytes, as: UTF8.self) else {
                    let escaped = nameBytes.map { $0 < 0x80 ? String(UnicodeScalar($0)) : "\\x" + hexByte($0) }.joined()
                    throw BacklotError(
                        .invalidInput,
                        "the name \"\(escaped)\" is not valid UTF-8, which an App Clip bundle can't hold",
                        context: directory, hint: "rename the file with a UTF-8 name")
                }
                let child = relative.isEmpty ? name : relative + "/" + name
                guard let status = try FileSystem.linkStatus(root + "/" + child) else { continue }  // removed meanwhile
                switch status.kind {
                case .directory: pending.append(child)
                case .regular: files.append(File(path: child, bytes: status.size))
                default: continue  // symbolic links (not followed: 0 bytes), sockets, FIFOs, devices
                }
            }
        }
        return files
    }
}

// MARK: - ZIP

extension AppClipSize {
    /// The file entries of a ZIP archive's central directory (PKWARE APPNOTE 6.3, ZIP64 included).
    static func zipFiles(_ path: String) throws -> [File] {
        let fd = try FileDescriptor.openForReading(path)
        defer { fd.close() }
        let fileSize = try fd.size()
        func bad(_ message: String, at offset: UInt64) -> BacklotError {
            BacklotError(
                .invalidInput, message, context: "\(path) at offset \(offset)",
                hint: "this is not a complete ZIP archive: export or download it again")
        }

        // The end of central directory record: 22 bytes and a comment of up to 65,535, so in the last 65,557 bytes.
        guard fileSize >= 22 else {
            throw bad("the file is \(fileSize) bytes, too short for a ZIP archive (its end record alone is 22)", at: 0)
        }
        let tailLength = min(fileSize, 65_557)
        let tailStart = fileSize - tailLength
        let tail = try fd.read(
            count: try CheckedInteger.convert(tailLength, to: Int.self, "the ZIP tail's length", context: path),
            at: tailStart)
        // Scanning back from the end, the record is one whose comment length is exactly the bytes
        // after it: a comment may itself hold the signature PK\5\6 (even a whole fake record),
        // which is then no record. Candidates are tried in that order, and the first whose central
        // directory ends right where the end record (or the ZIP64 one) begins is taken; then the
        // first that reads at all. An archive with bytes appended after its comment falls back on
        // signatures whose comment fits.
        var exact: [Int] = []
        var fitting: [Int] = []
        var i = tail.count - 22
        while i >= 0 {
            if tail[i] == 0x50, tail[i + 1] == 0x4B, tail[i + 2] == 0x05, tail[i + 3] == 0x06 {
                let end = i + 22 + Int(readLE16(tail, i + 20))
                if end == tail.count { exact.append(i) } else if end < tail.count { fitting.append(i) }
            }
            i -= 1
        }
        let candidates = exact + fitting
        guard !candidates.isEmpty else {
            throw bad(
                "no end of central directory record (PK\\5\\6) in the last \(tailLength) bytes: not a ZIP archive, or a truncated one",
                at: tailStart)
        }
        var loose: [File]? = nil
        var firstError: Error? = nil
        for e in candidates {
            do {
                let (files, tight) = try zipDirectory(
                    fd, path: path, tail: tail, tailStart: tailStart, endAt: e, fail: bad)
                if tight { return files }
                if loose == nil { loose = files }
            } catch {
                if firstError == nil { firstError = error }
            }
        }
        if let loose { return loose }
        throw firstError!
    }

    /// The largest ZIP central directory read (256 MiB).
    static let maximumZipDirectorySize: UInt64 = 256 << 20

    /// The central directory that the end record at `e` (an offset in `tail`) describes, and
    /// whether it ends exactly where the end record (or the ZIP64 end record) begins.
    private static func zipDirectory(
        _ fd: FileDescriptor, path: String, tail: [UInt8], tailStart: UInt64, endAt e: Int,
        fail: (String, UInt64) -> BacklotError
    ) throws -> ([File], Bool) {
        func bad(_ message: String, at offset: UInt64) -> BacklotError { fail(message, offset) }
        let endOffset = tailStart + UInt64(e)
        var disk = UInt64(readLE16(tail, e + 4))
        var directoryDisk = UInt64(readLE16(tail, e + 6))
        var entriesOnDisk = UInt64(readLE16(tail, e + 8))
        var entryCount = UInt64(readLE16(tail, e + 10))
        var directorySize = UInt64(readLE32(tail, e + 12))
        var directoryOffset = UInt64(readLE32(tail, e + 16))
        var directoryLimit = endOffset  // the central directory ends at or before this offset

        // ZIP64: a 20-byte locator right before the end record points at the ZIP64 end record.
        var locator: [UInt8] = []
        if endOffset >= 20 {
            locator = try e >= 20 ? Array(tail[(e - 20)..<e]) : fd.read(count: 20, at: endOffset - 20)
        }
        if locator.count == 20, readLE32(locator, 0) == 0x0706_4B50 {
            let locatorOffset = endOffset - 20
            let recordOffset = readLE64(locator, 8)
            guard recordOffset <= locatorOffset, locatorOffset - recordOffset >= 56 else {
                throw bad(
                    "the ZIP64 locator points at offset \(recordOffset), where no 56-byte ZIP64 end record fits before it",
                    at: locatorOffset)
            }
            let record = try fd.read(count: 56, at: recordOffset)
            guard readLE32(record, 0) == 0x0606_4B50 else {
                throw bad(
                    "no ZIP64 end of central directory record (PK\\6\\6) where the ZIP64 locator points",
                    at: recordOffset)
            }
            disk = UInt64(readLE32(record, 16))
            directoryDisk = UInt64(readLE32(record, 20))
            entriesOnDisk = readLE64(record, 24)
            entryCount = readLE64(record, 32)
            directorySize = readLE64(record, 40)
            directoryOffset = readLE64(record, 48)
            directoryLimit = recordOffset
        } else if directorySize == 0xFFFF_FFFF || directoryOffset == 0xFFFF_FFFF {
            throw bad("the end record defers to a ZIP64 record, but there is no ZIP64 locator before it", at: endOffset)
        }
        guard disk == 0, directoryDisk == 0, entriesOnDisk == entryCount else {
            throw bad("this is one part of a split (multi-disk) ZIP archive", at: endOffset)
        }
        guard directoryOffset <= directoryLimit, directorySize <= directoryLimit - directoryOffset else {
            throw bad(
                "the central directory (\(directorySize) bytes at offset \(directoryOffset)) runs past the end record at offset \(directoryLimit)",
                at: endOffset)
        }
        guard entryCount <= directorySize / 46 else {
            throw bad("\(entryCount) entries can't fit in a central directory of \(directorySize) bytes", at: endOffset)
        }
        // Read whole into memory: bounded, whatever a (sparse) file says. A million files with
        // 200-byte names take about 250 MB.
        guard directorySize <= Self.maximumZipDirectorySize else {
            throw bad(
                "the central directory is \(directorySize) bytes; at most \(Self.maximumZipDirectorySize >> 20) MiB are read",
                at: endOffset)
        }

        let directory = try fd.read(
            count: try CheckedInteger.convert(
                directorySize, to: Int.self, "the central directory's size", context: "\(path) at offset \(endOffset)"),
            at: directoryOffset)
        var files: [File] = []
        var total: UInt64 = 0
        var p = 0
        var n: UInt64 = 0
        // Every entry of the central directory is read, whatever the end record counts: some
        // writers store counts over 65,535 modulo 65,536 without ZIP64.
        while p < directory.count {
            defer { n += 1 }
            let at = directoryOffset + UInt64(p)
            guard p + 46 <= directory.count else {
                throw bad("central directory entry \(n) is cut off by the end of the central directory", at: at)
            }
            guard readLE32(directory, p) == 0x0201_4B50 else {
                throw bad("central directory entry \(n) does not start with its signature (PK\\1\\2)", at: at)
            }
            let madeBy = readLE16(directory, p + 4)
            let uncompressed32 = readLE32(directory, p + 24)
            let nameLength = Int(readLE16(directory, p + 28))
            let extraLength = Int(readLE16(directory, p + 30))
            let commentLength = Int(readLE16(directory, p + 32))
            let externalAttributes = readLE32(directory, p + 38)
            let nameStart = p + 46
            let extraStart = nameStart + nameLength
            let end = extraStart + extraLength + commentLength
            guard end <= directory.count else {
                throw bad(
                    "central directory entry \(n) (\(46 + nameLength + extraLength + commentLength) bytes) runs past the end of the central directory",
                    at: at)
            }
            let nameBytes = Array(directory[nameStart..<extraStart])
            let name = String(decoding: nameBytes, as: UTF8.self)
            var uncompressed = UInt64(uncompressed32)
            if uncompressed32 == 0xFFFF_FFFF {
                guard let size = zip64UncompressedSize(Array(directory[extraStart..<(extraStart + extraLength)])) else {
                    throw bad(
                        "entry \(n) (\(name)) defers its size to a ZIP64 extra field (0x0001), but has none that holds it",
                        at: at)
                }
                uncompressed = size
            }
            p = end
            if nameBytes.last == UInt8(ascii: "/") { continue }  // a directory
            // a Unix symbolic link: 0 bytes
            if madeBy >> 8 == 3, (externalAttributes >> 16) & 0o170000 == 0o120000 { continue }
            let (sum, overflow) = total.addingReportingOverflow(uncompressed)
            guard !overflow else { throw bad("the entries' sizes add up to more than 2^64 bytes", at: at) }
            total = sum
            files.append(File(path: name, bytes: uncompressed))
        }
        guard n == entryCount || (n > entryCount && n % 65_536 == entryCount) else {
            throw bad(
                "the end record counts \(entryCount) entries, but the central directory holds \(n)", at: directoryOffset
            )
        }
        return (files, directoryOffset + directorySize == directoryLimit)
    }

    /// The original (uncompressed) size in a ZIP64 extended information extra field (0x0001),
    /// where it comes first when the central directory's 32-bit field is 0xFFFFFFFF.
    static func zip64UncompressedSize(_ extra: [UInt8]) -> UInt64? {
        var q = 0
        while q + 4 <= extra.count {
            let id = readLE16(extra, q)
            let length = Int(readLE16(extra, q + 2))
            guard q + 4 + length <= extra.count else { return nil }
            if id == 0x0001 { return length >= 8 ? readLE64(extra, q + 4) : nil }
            q += 4 + length
        }
        return nil
    }
}

// MARK: - tar

extension AppClipSize {
    /// The regular files of an uncompressed tar archive (POSIX ustar and pax, GNU).
    static func tarFiles(_ path: String) throws -> [File] {
        let fd = try FileDescriptor.openForReading(path)
        defer { fd.close() }
        let fileSize = try fd.size()
        func bad(_ message: String, at offset: UInt64) -> BacklotError {
            BacklotError(
                .invalidInput, message, context: "\(path) at offset \(offset)",
                hint: "this is not a complete, uncompressed tar archive: create or download it again")
        }
        guard fileSize >= 512 else {
            throw bad("the file is \(fileSize) bytes, shorter than one tar header (512 bytes)", at: 0)
        }
        var files: [File] = []
        var total: UInt64 = 0
        var offset: UInt64 = 0
        var longName: String? = nil  // from a GNU 'L' entry, for the next entry
        var paxPath: String? = nil  // from a pax 'x' entry, for the next entry
        var paxSize: UInt64? = nil
        var longLink: String? = nil  // from a GNU 'K' entry, for the next entry
        var paxLink: String? = nil
        // a pax GNU.sparse.realsize (1.0) or GNU.sparse.size (0.x): a sparse file's expanded size
        var paxRealSize: UInt64? = nil
        var paxSparseName: String? = nil  // GNU.sparse.name (1.0: the header's name is a GNUSparseFile.N/ placeholder)
        var sizes: [BytePath.Key: UInt64] = [:]  // what each regular file holds, for hard links to it
        while fileSize - offset >= 512 {
            let header = try fd.read(count: 512, at: offset)
            if header.allSatisfy({ $0 == 0 }) { return files }  // the end-of-archive blocks
            guard tarChecksumMatches(header) else {
                throw bad("the tar header's checksum does not match: not a tar archive, or a damaged one", at: offset)
            }
            let type = header[156]
            let isMetadata =
                type == UInt8(ascii: "L") || type == UInt8(ascii: "K") || type == UInt8(ascii: "x")
                || type == UInt8(ascii: "g")
            guard let declared = tarSize(header[124..<136]) else {
                throw bad("the tar header's size field is not an octal or base-256 number", at: offset)
            }
            let size = isMetadata ? declared : (paxSize ?? declared)
            // POSIX: links, devices, directories and FIFOs (types 1 to 6) have no data, whatever the size says.
            let hasData = !(type >= UInt8(ascii: "1") && type <= UInt8(ascii: "6"))
            // A GNU sparse file (type 'S') may continue its map in extension headers (isextended
            // at byte 482, then at byte 504 of each 512-byte extension) before its data.
            var dataOffset = offset + 512
            if type == UInt8(ascii: "S") {
                var extended = header[482] != 0
                while extended {
                    guard fileSize - dataOffset >= 512 else {
                        throw bad("the GNU sparse entry's map continues past the end of the file", at: dataOffset)
                    }
                    extended = try fd.read(count: 512, at: dataOffset)[504] != 0
                    dataOffset += 512
                }
            }
            var next = dataOffset
            if hasData {
                guard size <= fileSize - dataOffset else {
                    throw bad(
                        "the entry declares \(size) bytes, but the file ends \(fileSize - dataOffset) bytes after its header",
                        at: offset)
                }
                let padded =
                    try CheckedInteger.add(size, 511, "the entry's padded size", context: "\(path) at offset \(offset)")
                    / 512 * 512
                guard padded <= fileSize - dataOffset else {
                    throw bad(
                        "the entry's data ends inside its last 512-byte block: the archive is truncated", at: offset)
                }
                next = dataOffset + padded
            }
            switch type {
            case UInt8(ascii: "L"):
                guard size <= 65_536 else {
                    throw bad("a GNU long name of \(size) bytes is longer than any path", at: offset)
                }
                let bytes = try fd.read(
                    count: try CheckedInteger.convert(size, to: Int.self, "a GNU long name's size", context: path),
                    at: dataOffset)
                longName = cString(bytes[...])
            case UInt8(ascii: "x"):
                guard size <= 1 << 20 else {
                    throw bad("a pax header of \(size) bytes is larger than 1 MiB", at: offset)
                }
                let paxData = try fd.read(
                    count: try CheckedInteger.convert(size, to: Int.self, "a pax header's size", context: path),
                    at: dataOffset)
                guard let records = paxRecords(paxData) else {
                    throw bad("the pax header's records are not \"LENGTH key=value\\n\"", at: dataOffset)
                }
                if let p = records["path"] { paxPath = p }
                if let l = records["linkpath"] { paxLink = l }
                for key in ["GNU.sparse.realsize", "GNU.sparse.size"] {
                    guard let s = records[key] else { continue }
                    guard let value = CheckedInteger.parse(s, as: UInt64.self) else {
                        throw bad(
                            "the pax \(key) \"\(s.prefix(64))\" is not a whole number of bytes from 0 to \(UInt64.max)",
                            at: dataOffset)
                    }
                    paxRealSize = value
                    break
                }
                if let n = records["GNU.sparse.name"] { paxSparseName = n }
                if let s = records["size"] {
                    // Decimal digits only, within UInt64: "-1", "1e3", "+5", "2^64" and "10^30" are refused, never trapped on.
                    guard let value = CheckedInteger.parse(s, as: UInt64.self) else {
                        throw bad(
                            "the pax size \"\(s.prefix(64))\" is not a whole number of bytes from 0 to \(UInt64.max)",
                            at: dataOffset)
                    }
                    paxSize = value
                }
            case UInt8(ascii: "K"):
                guard size <= 65_536 else {
                    throw bad("a GNU long link name of \(size) bytes is longer than any path", at: offset)
                }
                longLink = cString(
                    try fd.read(
                        count: try CheckedInteger.convert(size, to: Int.self, "a GNU long link's size", context: path),
                        at: dataOffset)[...])
            case UInt8(ascii: "g"):
                break  // pax global records: nothing that changes sizes
            default:
                let name = paxSparseName ?? paxPath ?? longName ?? ustarName(header)
                let linkTarget = BytePath.Key(resolve(paxLink ?? longLink ?? cString(header[157..<257])).path)
                let realSize = paxRealSize
                longName = nil
                paxPath = nil
                paxSize = nil
                longLink = nil
                paxLink = nil
                paxRealSize = nil
                paxSparseName = nil
                let isSparse = type == UInt8(ascii: "S")
                let isRegular = type == UInt8(ascii: "0") || type == 0 || type == UInt8(ascii: "7") || isSparse
                let isHardLink = type == UInt8(ascii: "1")
                let entryKey = BytePath.Key(resolve(name).path)
                if isRegular || isHardLink, !entryKey.bytes.isEmpty, !name.hasSuffix("/") {
                    // A sparse file holds its expanded size once extracted (the archive stores only
                    // its data blocks): GNU's realsize at byte 483, or pax's GNU.sparse records.
                    var fileBytes = size
                    if isSparse {
                        guard let real = tarSize(header[483..<495]) else {
                            throw bad(
                                "the GNU sparse entry's real size (byte 483) is not an octal or base-256 number",
                                at: offset)
                        }
                        fileBytes = real
                    } else if let realSize {
                        fileBytes = realSize
                    }
                    // A hard link is a file of its target's size once extracted, as in a directory.
                    let bytes = isHardLink ? (sizes[linkTarget] ?? 0) : fileBytes
                    let (sum, overflow) = total.addingReportingOverflow(bytes)
                    guard !overflow else { throw bad("the entries' sizes add up to more than 2^64 bytes", at: offset) }
                    total = sum
                    sizes[entryKey] = bytes
                    files.append(File(path: name, bytes: bytes))
                }
            }
            offset = next
        }
        // Without end-of-archive blocks, the archive must end exactly after an entry.
        guard offset == fileSize else {
            throw bad("the archive ends \(fileSize - offset) bytes into a 512-byte header", at: offset)
        }
        return files
    }

    /// Whether the header's checksum field (octal) is the sum of its bytes, the field counted as
    /// spaces (unsigned, or signed as some old tars computed it).
    static func tarChecksumMatches(_ header: [UInt8]) -> Bool {
        guard let stored = octalNumber(header[148..<156]) else { return false }
        var unsigned: Int64 = 0
        var signed: Int64 = 0
        for (i, b) in header.enumerated() {
            let v: UInt8 = (148..<156).contains(i) ? 0x20 : b
            unsigned += Int64(v)
            signed += Int64(Int8(bitPattern: v))
        }
        // 8 octal digits always fit; a wider value matches nothing
        guard let stored = Int64(exactly: stored) else { return false }
        return stored == unsigned || stored == signed
    }

    /// A size field: octal digits (NUL- or space-terminated), or GNU base-256 when the first byte has its high bit set.
    static func tarSize(_ field: ArraySlice<UInt8>) -> UInt64? {
        guard let first = field.first else { return nil }
        if first & 0x80 == 0 { return octalNumber(field) }
        guard first & 0x40 == 0 else { return nil }  // negative
        var value: UInt64 = UInt64(first & 0x7F)
        for b in field.dropFirst() {
            guard value >> 56 == 0 else { return nil }
            value = value << 8 | UInt64(b)
        }
        return value
    }

    /// Octal digits after optional leading spaces, ended by a space, a NUL or the field's end. Empty is 0.
    static func octalNumber(_ field: ArraySlice<UInt8>) -> UInt64? {
        var value: UInt64 = 0
        var seenDigit = false
        for b in field {
            if b >= 0x30 && b <= 0x37 {  // '0'...'7'
                guard value >> 61 == 0 else { return nil }
                value = value << 3 | UInt64(b - 0x30)
                seenDigit = true
            } else if b == 0x20 || b == 0 {
                if seenDigit { break }
            } else {
                return nil
            }
        }
        return value
    }

    /// The entry's name: ustar's prefix and name (POSIX magic `ustar\0`), else the 100-byte name.
    static func ustarName(_ header: [UInt8]) -> String {
        let name = cString(header[0..<100])
        let isPOSIX = Array(header[257..<263]) == Array("ustar".utf8) + [0]
        let prefix = isPOSIX ? cString(header[345..<500]) : ""
        return prefix.isEmpty ? name : prefix + "/" + name
    }

    /// pax extended header records, `LENGTH key=value\n` each, or nil when malformed.
    static func paxRecords(_ data: [UInt8]) -> [String: String]? {
        var records: [String: String] = [:]
        var i = 0
        while i < data.count, data[i] != 0 {
            var j = i
            var length = 0
            while j < data.count, data[j] >= 0x30, data[j] <= 0x39 {
                length = length * 10 + Int(data[j] - 0x30)
                guard length <= data.count else { return nil }
                j += 1
            }
            // The record is "digits space key=value newline", LENGTH bytes in all.
            guard j > i, j < data.count, data[j] == 0x20, i + length <= data.count, i + length - 1 > j,
                data[i + length - 1] == 0x0A
            else {
                return nil
            }
            let record = data[(j + 1)..<(i + length - 1)]
            guard let eq = record.firstIndex(of: 0x3D) else { return nil }  // '='
            let key = String(decoding: record[record.startIndex..<eq], as: UTF8.self)
            records[key] = String(decoding: record[(eq + 1)..<record.endIndex], as: UTF8.self)
            i += length
        }
        return records
    }

    /// The text before the first NUL.
    static func cString(_ bytes: ArraySlice<UInt8>) -> String {
        let end = bytes.firstIndex(of: 0) ?? bytes.endIndex
        return String(decoding: bytes[bytes.startIndex..<end], as: UTF8.self)
    }
}

// MARK: - Bytes

/// A little-endian 16-bit integer at `i` (the caller has checked the bounds).
private func readLE16(_ b: [UInt8], _ i: Int) -> UInt16 {
    UInt16(b[i]) | UInt16(b[i + 1]) << 8
}

/// A little-endian 32-bit integer at `i`.
private func readLE32(_ b: [UInt8], _ i: Int) -> UInt32 {
    UInt32(readLE16(b, i)) | UInt32(readLE16(b, i + 2)) << 16
}

/// A little-endian 64-bit integer at `i`.
private func readLE64(_ b: [UInt8], _ i: Int) -> UInt64 {
    UInt64(readLE32(b, i)) | UInt64(readLE32(b, i + 4)) << 32
}

/// Two upper-case hex digits.
private func hexByte(_ b: UInt8) -> String {
    let digits = Array("0123456789ABCDEF")
    return String(digits[Int(b >> 4)]) + String(digits[Int(b & 0xF)])
}
