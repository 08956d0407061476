import BacklotBasics
import Foundation
import Testing

@testable import BacklotAppClips

/// Issue #19 §7: sparse files, ZIP comments and `.ipa` paths, on archives made by GNU tar and
/// Python's zipfile in each test.
@Suite struct ClipArchiveRuleTests {
    /// Runs a tool; returns its exit status.
    func run(_ tool: String, _ arguments: [String], in dir: String? = nil) throws -> Int32 {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: tool)
        p.arguments = arguments
        if let dir { p.currentDirectoryURL = URL(fileURLWithPath: dir) }
        try p.run()
        p.waitUntilExit()
        return p.terminationStatus
    }

    func python(_ script: String, _ dir: String) throws {
        #expect(try run("/usr/bin/env", ["python3", "-c", script], in: dir) == 0)
    }

    func temporary(_ body: (String) throws -> Void) throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent(
            "backlot-clip-rules-\(UUID().uuidString)"
        ).path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try body(dir)
    }

    /// A 5 MB sparse file with 40 islands of data (more than the 4 map entries a GNU header holds,
    /// so the map goes on in extension headers) and a small ordinary file.
    func makeSparseClip(_ dir: String) throws {
        try FileManager.default.createDirectory(atPath: dir + "/src/Clip.app", withIntermediateDirectories: true)
        let fd = open(dir + "/src/Clip.app/Big.bin", O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        #expect(fd >= 0)
        for i in 0..<40 {
            let block = [UInt8](repeating: UInt8(i + 1), count: 4096)
            _ = block.withUnsafeBytes { pwrite(fd, $0.baseAddress, 4096, off_t(i) * 120_000) }
        }
        #expect(ftruncate(fd, 5_000_000) == 0)
        close(fd)
        try Data(repeating: 0x61, count: 100).write(to: URL(fileURLWithPath: dir + "/src/Clip.app/Info.plist"))
    }

    @Test(arguments: [
        ["--format=gnu"], ["--format=posix", "--sparse-version=0.0"], ["--format=posix", "--sparse-version=0.1"],
        ["--format=posix", "--sparse-version=1.0"],
    ])
    func sparseFilesCountTheirExpandedSize(options: [String]) throws {
        try temporary { dir in
            try makeSparseClip(dir)
            #expect(
                try run(
                    "/usr/bin/tar", options + ["--sparse", "-cf", dir + "/Clip.tar", "-C", dir + "/src", "Clip.app"])
                    == 0)
            // The archive holds only the data blocks …
            let stored = try #require(try FileSystem.status(dir + "/Clip.tar")).size
            #expect(stored < 1_000_000, "tar \(options) did not store the file sparse (\(stored) bytes)")
            // … but the clip, once extracted, is the expanded size, under the file's own name.
            let size = try AppClipSize(measuring: dir + "/Clip.tar")
            #expect(
                size.files == [
                    AppClipSize.File(path: "Clip.app/Big.bin", bytes: 5_000_000),
                    AppClipSize.File(path: "Clip.app/Info.plist", bytes: 100),
                ],
                "\(options)")
            #expect(size.totalBytes == 5_000_100)
        }
    }

    @Test func aZipCommentHoldingTheEndRecordSignatureIsJustAComment() throws {
        try temporary { dir in
            // A comment that looks like an end record for an empty archive (and one with a nonsense offset).
            try python(
                """
                import zipfile
                fake = b'PK\\x05\\x06' + bytes(18)
                odd = b'PK\\x05\\x06' + bytes(8) + (999).to_bytes(4, 'little') + (0xFFFFFF).to_bytes(4, 'little') + bytes(2)
                for name, comment in (('a.zip', b'made by ' + fake + b' hand'), ('b.zip', odd + b'!'), ('c.zip', fake)):
                    with zipfile.ZipFile(name, 'w') as z:
                        z.writestr('Clip.app/Clip', b'x' * 3000)
                        z.writestr('Clip.app/Info.plist', b'y' * 700)
                        z.comment = comment
                """, dir)
            for name in ["a.zip", "b.zip", "c.zip"] {
                let size = try AppClipSize(measuring: dir + "/" + name)
                #expect(size.totalBytes == 3_700, "\(name)")
                #expect(size.files.map(\.path) == ["Clip.app/Clip", "Clip.app/Info.plist"], "\(name)")
            }
        }
    }

    @Test func ipaPathsAreResolvedOnBytesAndEscapesAreRefused() throws {
        try temporary { dir in
            try python(
                """
                import zipfile
                def ipa(name, entries):
                    with zipfile.ZipFile(name, 'w') as z:
                        for path, n in entries:
                            z.writestr(zipfile.ZipInfo(path), b'z' * n)
                ipa('same.ipa', [('Payload/Clip.app/./Clip', 100), ('Payload/Clip.app//Clip', 200), ('Payload/Clip.app/sub/../Clip', 300),
                                 ('Payload//Clip.app/Info.plist', 40), ('./Payload/Clip.app/x', 5), ('Symbols/../Payload/Clip.app/y', 6)])
                ipa('climb.ipa', [('Payload/Clip.app/Clip', 10), ('Payload/Clip.app/../../evil', 1000)])
                ipa('sibling.ipa', [('Payload/Clip.app/Clip', 10), ('Payload/Clip.app/../Other.app/big', 1000)])
                ipa('absolute.ipa', [('Payload/Clip.app/Clip', 10), ('/Payload/Clip.app/abs', 1000)])
                ipa('root.zip', [('Clip.app/Clip', 10), ('../outside', 1000)])
                """, dir)
            let same = try AppClipSize(measuring: dir + "/same.ipa")
            // One path, the last entry wins, as extraction leaves it.
            #expect(
                same.files == [
                    AppClipSize.File(path: "Payload/Clip.app/Clip", bytes: 300),
                    AppClipSize.File(path: "Payload/Clip.app/Info.plist", bytes: 40),
                    AppClipSize.File(path: "Payload/Clip.app/x", bytes: 5),
                    AppClipSize.File(path: "Payload/Clip.app/y", bytes: 6),
                ])
            for (name, why) in [
                ("climb.ipa", "climbs out"), ("sibling.ipa", "climbs out of the Payload/NAME.app"),
                ("absolute.ipa", "absolute"), ("root.zip", "climbs out of the archive's root"),
            ] {
                #expect { try AppClipSize(measuring: dir + "/" + name) } throws: { e in
                    (e as? BacklotError)?.code == .invalidInput && "\(e)".contains(why)
                }
            }
        }
    }

    @Test func tarPathsAreOnePathWhateverTheirSpelling() throws {
        try temporary { dir in
            try python(
                """
                import tarfile, io
                with tarfile.open('t.tar', 'w', format=tarfile.GNU_FORMAT) as t:
                    for path, n in (('./Clip.app/a', 10), ('Clip.app//a', 20), ('Clip.app/d/../a', 30), ('Clip.app/b', 7)):
                        info = tarfile.TarInfo(path)
                        info.size = n
                        t.addfile(info, io.BytesIO(b'q' * n))
                    link = tarfile.TarInfo('Clip.app/c')
                    link.type = tarfile.LNKTYPE
                    link.linkname = './Clip.app//b'
                    t.addfile(link)
                """, dir)
            let size = try AppClipSize(measuring: dir + "/t.tar")
            #expect(
                size.files == [
                    AppClipSize.File(path: "Clip.app/a", bytes: 30), AppClipSize.File(path: "Clip.app/b", bytes: 7),
                    AppClipSize.File(path: "Clip.app/c", bytes: 7),
                ])
        }
    }
}
