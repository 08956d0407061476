import BacklotBasics
import BacklotFormat
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Extracts an Apple Archive into a new folder, as a pack is extracted: into a staging folder
/// beside it, every file's data checked (``AppleArchiveReader``) before the one rename that makes
/// the folder appear; on any error nothing is left. Files get mode 0644, or 0755 when the entry's
/// `MOD` has an execute bit; symbolic links are refused (a pack holds none, and none is followed).
public struct AppleArchiveExtractor {
    let reader: AppleArchiveReader

    public init(_ reader: AppleArchiveReader) { self.reader = reader }

    /// - Returns: what the archive held.
    /// - Throws: ``BacklotError/Code/alreadyExists`` when `directory` exists and is not empty;
    ///   ``BacklotError/Code/corruptArchive`` (the reader's, or a link entry); what writing throws.
    public func extract(to directory: String) throws -> AppleArchiveReader.Summary {
        // The plain stream's length bounds what is written: the free space is checked against it.
        try StagedFolder.make(directory, needing: reader.plainSize, of: "the archive") { staging in
            try reader.readAll { entry in
                let destination = staging + "/" + entry.path
                switch entry.kind {
                case .directory:
                    if !entry.path.isEmpty { try Self.makeFolders(entry.path, in: staging, includingLast: true) }
                    return nil
                case .file:
                    try Self.makeFolders(entry.path, in: staging, includingLast: false)
                    let executable = (entry.mode ?? 0) & 0o111 != 0
                    let fd = open(
                        destination, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, executable ? 0o755 : 0o644)
                    guard fd >= 0 else { throw SystemCall.error("create", path: destination) }
                    let file = FileDescriptor(rawValue: fd, path: destination)
                    var offset: UInt64 = 0
                    return AppleArchiveReader.DataSink(
                        write: { piece in
                            try file.write(piece, at: offset)
                            offset += UInt64(piece.count)
                        },
                        finish: { file.close() })
                case .symbolicLink:
                    throw BacklotError(
                        .corruptArchive, "the archive holds a symbolic link, which extract does not make",
                        context: "\(reader.name): \"\(TerminalText.escaped(entry.path))\"",
                        hint: "an asset pack holds files and folders: replace the link by the file it names")
                default:
                    return nil
                }
            }
        }
    }

    /// Makes the folders of `path` below `root` (its last component too when `includingLast`):
    /// nothing when the innermost exists already (one look for most entries, whatever the depth).
    static func makeFolders(_ path: String, in root: String, includingLast: Bool) throws {
        var folders = BytePath.ancestors(of: path)
        if includingLast { folders.append(path) }
        guard let innermost = folders.last, !FileSystem.exists(root + "/" + innermost) else { return }
        for folder in folders where !FileSystem.exists(root + "/" + folder) {
            try FileSystem.makeDirectory(root + "/" + folder)
        }
    }
}
