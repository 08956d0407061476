import BacklotBasics
import BacklotCodecs
import BacklotFormat

/// Writes an Apple Archive (`.aar`) of a selection, deterministically: the same files give the same
/// bytes (no times, owners or inode numbers inside). Each entry has the fields an asset pack needs
/// and Apple's readers take (docs/format.md §13): `TYP` (F or D), `PAT`, `MOD` (0644 or 0755),
/// and for a file `DAT` (its bytes) and `CKS` (their CRC-32, which readers check); a root folder
/// entry (empty `PAT`) first, then `Contents` (``contentsFolder``: `ba-package` stores the selected
/// files under it), then each folder before the files in it, all in byte order of path.
/// The plain stream is cut into blocks of ``blockSize`` (4 MiB, Apple's default), each compressed
/// on its own (`pbzz` zlib level 5 by default, `pbzx` LZMA, `pbz4` LZ4) or none (`AA01` entries).
///
/// ```swift
/// try AppleArchiveWriter(compression: .zlib).write(selection, to: "Tutorial.aar", overwrite: false)
/// ```
public struct AppleArchiveWriter {
    /// How the plain stream is compressed.
    public enum Compression: String, Sendable, CaseIterable {
        case none, zlib, lzma, lz4

        var magic: UInt8? {
            switch self {
            case .none: nil
            case .zlib: UInt8(ascii: "z")
            case .lzma: UInt8(ascii: "x")
            case .lz4: UInt8(ascii: "4")
            }
        }
    }

    public var compression: Compression
    public var blockSize = 4 << 20

    /// The folder `ba-package` stores a pack's files under: a selector's `Videos/a.m4v` is the entry
    /// `Contents/Videos/a.m4v`.
    public static let contentsFolder = "Contents"

    public init(compression: Compression = .zlib) { self.compression = compression }

    /// What was written.
    public struct Summary: Sendable, Hashable {
        public var files = 0
        public var installSize: UInt64 = 0
        public var archiveSize: UInt64 = 0
    }

    /// Writes the files of `selection` (their pack paths) to `path`: a temporary file beside it,
    /// flushed and renamed into place; nothing is left on failure.
    /// - Throws: ``BacklotError/Code/alreadyExists`` when `path` exists and not `overwrite`; what
    ///   reading a source file throws (one that changed size since it was selected is refused).
    public func write(_ selection: SourceSelection, to path: String, overwrite: Bool) throws -> Summary {
        let output = try AtomicFile(path: path, overwrite: overwrite)
        do {
            var sink = BlockSink(writer: self, output: output.descriptor)
            try sink.start()
            var summary = Summary()
            try sink.add(Self.header(kind: UInt8(ascii: "D"), path: "", mode: 0o755, data: nil))
            try sink.add(Self.header(kind: UInt8(ascii: "D"), path: Self.contentsFolder, mode: 0o755, data: nil))
            var folders = Set<BytePath.Key>()
            let root = try DirectoryHandle(path: selection.sourceRoot)
            for file in selection.files {
                let entryPath = Self.contentsFolder + "/" + file.packPath
                for folder in BytePath.ancestors(of: file.packPath) where folders.insert(BytePath.Key(folder)).inserted
                {
                    let path = Self.contentsFolder + "/" + folder
                    try sink.add(Self.header(kind: UInt8(ascii: "D"), path: path, mode: 0o755, data: nil))
                }
                let (fd, size) = try root.openRegularFile(file.readPath)
                defer { fd.close() }
                guard size == file.size else {
                    throw BacklotError(
                        .invalidSource, "the file changed size while it was packaged (\(file.size) → \(size))",
                        context: file.absolutePath, hint: "package again once it is written")
                }
                // The CRC-32 goes in the header, before the data: a first read for it.
                var crc: UInt32 = 0
                try Self.forEachPiece(of: fd, size: size, path: file.absolutePath) { piece in
                    crc = piece.withUnsafeBytes { Zlib.crc32($0, continuing: crc) }
                }
                try sink.add(
                    Self.header(kind: UInt8(ascii: "F"), path: entryPath, mode: UInt16(file.mode), data: (size, crc)))
                var check: UInt32 = 0
                try Self.forEachPiece(of: fd, size: size, path: file.absolutePath) { piece in
                    check = piece.withUnsafeBytes { Zlib.crc32($0, continuing: check) }
                    try sink.add(piece)
                }
                guard check == crc else {
                    throw BacklotError(
                        .invalidSource, "the file changed while it was packaged", context: file.absolutePath,
                        hint: "package again once it is written")
                }
                summary.files += 1
                summary.installSize += size
            }
            try sink.finish()
            summary.archiveSize = sink.written
            try output.commit()
            return summary
        } catch {
            output.discard()
            throw error
        }
    }

    /// The `size` bytes of the file open as `fd`, a MiB at a time.
    /// - Throws: ``BacklotError/Code/io`` when the file is shorter than `size`; what reading throws.
    static func forEachPiece(
        of fd: FileDescriptor, size: UInt64, path: String, _ body: ([UInt8]) throws -> Void
    ) throws {
        var offset: UInt64 = 0
        while offset < size {
            let piece = try fd.read(count: Int(min(size - offset, 1 << 20)), at: offset)
            guard !piece.isEmpty else { throw BacklotError(.io, "the file shrank while it was read", context: path) }
            try body(piece)
            offset += UInt64(piece.count)
        }
    }

    /// An entry's header: `AA01`, its length, then the fields.
    static func header(kind: UInt8, path: String, mode: UInt16, data: (size: UInt64, crc: UInt32)?) -> [UInt8] {
        var fields: [UInt8] = []
        func key(_ text: String) { fields += Array(text.utf8) }
        func little<T: FixedWidthInteger>(_ value: T) { withUnsafeBytes(of: value.littleEndian) { fields += $0 } }
        key("TYP1")
        fields.append(kind)
        key("PATP")
        little(UInt16(path.utf8.count))
        fields += Array(path.utf8)
        key("MOD2")
        little(mode)
        if let data {
            key("CKSF")
            little(data.crc)
            if data.size <= UInt64(UInt32.max) {
                key("DATB")
                little(UInt32(data.size))
            } else {
                key("DATC")
                little(data.size)
            }
        }
        return Array("AA01".utf8) + withUnsafeBytes(of: UInt16(6 + fields.count).littleEndian) { Array($0) } + fields
    }

    /// Cuts the plain stream into blocks and writes each, compressed.
    struct BlockSink {
        let writer: AppleArchiveWriter
        let output: FileDescriptor
        var buffer: [UInt8] = []
        var written: UInt64 = 0

        mutating func start() throws {
            guard let magic = writer.compression.magic else { return }
            var head = Array("pbz".utf8) + [magic]
            withUnsafeBytes(of: UInt64(writer.blockSize).bigEndian) { head += $0 }
            try emit(head)
        }

        mutating func add(_ bytes: [UInt8]) throws {
            guard writer.compression != .none else { return try emit(bytes) }
            var rest = bytes[...]
            while !rest.isEmpty {
                let room = writer.blockSize - buffer.count
                buffer += rest.prefix(room)
                rest = rest.dropFirst(room)
                if buffer.count == writer.blockSize { try flush() }
            }
        }

        mutating func finish() throws { if !buffer.isEmpty { try flush() } }

        mutating func flush() throws {
            let payload: [UInt8]
            do {
                switch writer.compression {
                case .zlib: payload = try Zlib.compress(buffer, level: 5)
                case .lzma: payload = try LZMA.compress(buffer, preset: 6)
                case .lz4: payload = try LZ4Frames.compress(buffer)
                case .none: payload = buffer
                }
            } catch let e as CodecError {
                throw BacklotError(.io, "a block could not be compressed: \(e.message)")
            }
            // A compressed block the size of its raw bytes would be read as stored: never written.
            guard payload.count != buffer.count else {
                throw BacklotError(
                    .io, "a block compressed to exactly its own size, which readers take for a stored block",
                    hint: "package again with another --compression")
            }
            var head: [UInt8] = []
            withUnsafeBytes(of: UInt64(buffer.count).bigEndian) { head += $0 }
            withUnsafeBytes(of: UInt64(payload.count).bigEndian) { head += $0 }
            try emit(head + payload)
            buffer.removeAll(keepingCapacity: true)
        }

        mutating func emit(_ bytes: [UInt8]) throws {
            try output.write(bytes)
            written += UInt64(bytes.count)
        }
    }
}
