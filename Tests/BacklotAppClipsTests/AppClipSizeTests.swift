import BacklotBasics
import BacklotJSON
import Foundation
import Testing

@testable import BacklotAppClips

#if canImport(Glibc)
import Glibc
#endif

struct AppClipSizeRuleTests {
    /// Every case: (minimum iOS, invocations, demo link) → the rule's id and limit in bytes.
    static let table: [(Int, AppClipInvocations, Bool, String, UInt64)] = [
        (14, .digital, false, "ios15-and-earlier", 10_000_000),
        (14, .physical, false, "ios15-and-earlier", 10_000_000),
        (14, .both, false, "ios15-and-earlier", 10_000_000),
        (14, .digital, true, "ios15-and-earlier", 10_000_000),
        (14, .physical, true, "ios15-and-earlier", 10_000_000),
        (14, .both, true, "ios15-and-earlier", 10_000_000),
        (15, .digital, false, "ios15-and-earlier", 10_000_000),
        (15, .physical, false, "ios15-and-earlier", 10_000_000),
        (15, .both, false, "ios15-and-earlier", 10_000_000),
        (15, .digital, true, "ios15-and-earlier", 10_000_000),
        (15, .physical, true, "ios15-and-earlier", 10_000_000),
        (15, .both, true, "ios15-and-earlier", 10_000_000),
        (16, .digital, false, "ios16", 15_000_000),
        (16, .physical, false, "ios16", 15_000_000),
        (16, .both, false, "ios16", 15_000_000),
        (16, .digital, true, "ios16", 15_000_000),
        (16, .physical, true, "ios16", 15_000_000),
        (16, .both, true, "ios16", 15_000_000),
        (17, .digital, false, "ios17-digital-only", 100_000_000),
        (17, .physical, false, "ios17-physical", 15_000_000),
        (17, .both, false, "ios17-physical", 15_000_000),
        (17, .digital, true, "ios17-demo-link", 100_000_000),
        (17, .physical, true, "ios17-demo-link", 100_000_000),
        (17, .both, true, "ios17-demo-link", 100_000_000),
        (18, .digital, false, "ios17-digital-only", 100_000_000),
        (18, .physical, false, "ios17-physical", 15_000_000),
        (18, .both, false, "ios17-physical", 15_000_000),
        (18, .digital, true, "ios17-demo-link", 100_000_000),
        (18, .physical, true, "ios17-demo-link", 100_000_000),
        (18, .both, true, "ios17-demo-link", 100_000_000),
    ]

    @Test func theRuleFollowsTheMinimumOSThenTheDemoLinkThenTheInvocations() {
        #expect(Self.table.count == 5 * 3 * 2)
        for (minimumOS, invocations, demoLink, id, limit) in Self.table {
            let rule = AppClipSizeRule.rule(minimumOS: minimumOS, invocations: invocations, demoLink: demoLink)
            #expect(rule.id == id, "min-os \(minimumOS), \(invocations.rawValue) invocations, demo link \(demoLink)")
            #expect(
                rule.limitBytes == limit,
                "min-os \(minimumOS), \(invocations.rawValue) invocations, demo link \(demoLink)")
        }
    }

    @Test func megabytesAreDecimalWithTwoDecimals() {
        #expect(AppClipSizeRule.bytesPerMegabyte == 1_000_000)
        #expect(AppClipSizeRule.megabytes(15_000_000) == "15.00 MB")
        #expect(AppClipSizeRule.megabytes(12_345_678) == "12.35 MB")
        #expect(AppClipSizeRule.megabytes(4_999) == "0.00 MB")
        #expect(AppClipSizeRule.megabytes(5_000) == "0.01 MB")
        #expect(AppClipSizeRule.megabytes(10_485_760) == "10.49 MB")  // 10 MiB is not 10 MB
        #expect(AppClipSizeRule.iOS16.description == "iOS 16: 15.00 MB")
    }

    @Test func everyRuleIsDocumentedWithItsHistory() {
        #expect(Set(AppClipSizeRule.all.map(\.id)).count == AppClipSizeRule.all.count)
        for rule in AppClipSizeRule.all {
            #expect(!rule.history.isEmpty && !rule.summary.isEmpty && !rule.whenOver.isEmpty, "\(rule.id)")
        }
        #expect(AppClipSizeRule.iOS17DigitalOnly.history.contains(where: { $0.contains("50 MB") }))
    }

    @Test func exactlyTheLimitIsWithinAndOneByteMoreIsOver() {
        let cases: [(Int, AppClipInvocations, Bool)] = [
            (15, .both, false), (16, .both, false), (17, .physical, false), (17, .digital, false),
            (17, .physical, true),
        ]
        for (minimumOS, invocations, demoLink) in cases {
            let limit = AppClipSizeRule.rule(minimumOS: minimumOS, invocations: invocations, demoLink: demoLink)
                .limitBytes
            let atLimit = AppClipSizeReport(
                size: Self.size([limit - 1_000, 1_000]), minimumOS: minimumOS, invocations: invocations,
                demoLink: demoLink)
            #expect(atLimit.totalBytes == limit)
            #expect(!atLimit.isOver && atLimit.headroomBytes == 0 && atLimit.overflowBytes == 0, "limit \(limit)")
            let over = AppClipSizeReport(
                size: Self.size([limit - 1_000, 1_001]), minimumOS: minimumOS, invocations: invocations,
                demoLink: demoLink)
            #expect(over.isOver && over.headroomBytes == -1 && over.overflowBytes == 1, "limit \(limit)")
            let under = AppClipSizeReport(
                size: Self.size([limit - 1_000, 999]), minimumOS: minimumOS, invocations: invocations,
                demoLink: demoLink)
            #expect(!under.isOver && under.headroomBytes == 1, "limit \(limit)")
        }
    }

    @Test func theReportKeepsTheTenLargestFilesAndSaysItAllInJSON() throws {
        let size = Self.size((1...12).map { UInt64($0) * 1_000_000 })
        let report = AppClipSizeReport(size: size, minimumOS: 17, invocations: .both, demoLink: false)
        #expect(report.largestFiles.count == 10)
        #expect(report.largestFiles.first == AppClipSize.File(path: "file12", bytes: 12_000_000))
        #expect(report.largestFiles.last?.bytes == 3_000_000)
        #expect(report.totalBytes == 78_000_000 && report.isOver && report.overflowBytes == 63_000_000)
        let json = try #require(
            try JSONSerialization.jsonObject(with: JSONEncoder().encode(report)) as? [String: Any])
        #expect(json["sizeBytes"] as? Int == 78_000_000)
        #expect(json["limitBytes"] as? Int == 15_000_000)
        #expect(json["headroomBytes"] as? Int == -63_000_000)
        #expect(json["isOver"] as? Bool == true)
        #expect((json["rule"] as? [String: Any])?["id"] as? String == "ios17-physical")
        #expect((json["largestFiles"] as? [[String: Any]])?.count == 10)
        #expect(json["packs"] == nil && json["clipBytes"] == nil, "no pack counted: neither key")
        // With a pack counted, the clip's own bytes and the pack's install size.
        let withPack = AppClipSizeReport(
            size: size, minimumOS: 17, invocations: .both, demoLink: false,
            packs: [.init(id: "Levels", variant: nil, bytes: 5)])
        let packJSON = try #require(
            try JSONSerialization.jsonObject(with: JSONEncoder().encode(withPack)) as? [String: Any])
        #expect(packJSON["clipBytes"] as? Int == 78_000_000 && packJSON["sizeBytes"] as? Int == 78_000_005)
        #expect(
            (packJSON["packs"] as? [[String: Any]])?.first?["installBytes"] as? Int == 5
                && (packJSON["packs"] as? [[String: Any]])?.first?["variant"] == nil)
    }

    /// A clip made of files of these sizes, named file1, file2, …
    static func size(_ sizes: [UInt64]) -> AppClipSize {
        AppClipSize(
            path: "Clip.app", form: .directory,
            files: sizes.enumerated().map { AppClipSize.File(path: "file\($0.offset + 1)", bytes: $0.element) })
    }
}

struct AppClipMeasurementTests {
    @Test func aDirectoryIsTheSumOfItsRegularFilesAndLinksCountNothing() throws {
        try withTemporaryDirectory { dir in
            try writeFile("\(dir)/Clip.app/Clip", bytes: 2_500)
            try writeFile("\(dir)/Clip.app/Info.plist", bytes: 1_000)
            try writeFile("\(dir)/Clip.app/Frameworks/Kit.framework/Kit", bytes: 4_096)
            try writeFile("\(dir)/Clip.app/empty", bytes: 0)
            try FileManager.default.createDirectory(
                atPath: "\(dir)/Clip.app/Empty Folder", withIntermediateDirectories: true)
            try FileManager.default.createSymbolicLink(
                atPath: "\(dir)/Clip.app/link", withDestinationPath: "Frameworks/Kit.framework/Kit")
            try FileManager.default.createSymbolicLink(
                atPath: "\(dir)/Clip.app/dangling", withDestinationPath: "nowhere")

            let size = try AppClipSize(measuring: "\(dir)/Clip.app")
            #expect(size.form == .directory)
            #expect(size.totalBytes == 7_596)
            #expect(size.files.map(\.path) == ["Clip", "Frameworks/Kit.framework/Kit", "Info.plist", "empty"])
            #expect(
                size.largest(2) == [
                    AppClipSize.File(path: "Frameworks/Kit.framework/Kit", bytes: 4_096),
                    AppClipSize.File(path: "Clip", bytes: 2_500),
                ])
            #expect(size.largest(0).isEmpty && size.largest(99).count == 4)
        }
    }

    @Test func aZipIsReadFromItsCentralDirectory() throws {
        try withTemporaryDirectory { dir in
            let bytes = zipArchive(
                [
                    ZipEntry(name: "Clip.app/", data: [], mode: 0o040755),
                    ZipEntry(name: "Clip.app/Clip", data: [UInt8](repeating: 0x41, count: 3_000)),
                    ZipEntry(name: "Clip.app/Info.plist", data: [UInt8](repeating: 0x42, count: 700)),
                    ZipEntry(name: "Clip.app/link", data: Array("Clip".utf8), mode: 0o120777),
                ], comment: "made by hand")
            for name in ["Clip.zip"] {
                try Data(bytes).write(to: URL(fileURLWithPath: "\(dir)/\(name)"))
                let size = try AppClipSize(measuring: "\(dir)/\(name)")
                #expect(size.form == .zip)
                #expect(size.totalBytes == 3_700)
                #expect(
                    size.files == [
                        AppClipSize.File(path: "Clip.app/Clip", bytes: 3_000),
                        AppClipSize.File(path: "Clip.app/Info.plist", bytes: 700),
                    ])
            }
        }
    }

    @Test func anArchiveCountsWhatUnpackingItGives() throws {
        try withTemporaryDirectory { dir in
            // An .ipa: only Payload/NAME.app counts; a later entry of one path replaces an earlier one;
            // macOS's AppleDouble companions are not part of the bundle.
            let ipa = zipArchive([
                ZipEntry(name: "Payload/Clip.app/Clip", data: [UInt8](repeating: 1, count: 900)),
                ZipEntry(name: "Payload/Clip.app/Clip", data: [UInt8](repeating: 1, count: 1_000)),
                ZipEntry(name: "Payload/Clip.app/._Clip", data: [UInt8](repeating: 1, count: 4_096)),
                ZipEntry(name: "__MACOSX/Payload/Clip.app/._Clip", data: [UInt8](repeating: 1, count: 4_096)),
                ZipEntry(name: "Symbols/ABCD.symbols", data: [UInt8](repeating: 1, count: 50_000)),
                ZipEntry(name: "SwiftSupport/iphoneos/libswiftCore.dylib", data: [UInt8](repeating: 1, count: 70_000)),
                ZipEntry(name: "iTunesMetadata.plist", data: [UInt8](repeating: 1, count: 300)),
            ])
            try Data(ipa).write(to: URL(fileURLWithPath: "\(dir)/Clip.ipa"))
            let size = try AppClipSize(measuring: "\(dir)/Clip.ipa")
            #expect(size.files == [AppClipSize.File(path: "Payload/Clip.app/Clip", bytes: 1_000)])
            // A tar with a hard link measures as the unpacked directory does: each path its file's size.
            try writeFile("\(dir)/src/Clip.app/Clip", bytes: 2_000)
            #expect(link("\(dir)/src/Clip.app/Clip", "\(dir)/src/Clip.app/Clip-again") == 0)
            #expect(try runTool("/usr/bin/tar", ["-cf", "\(dir)/Clip.tar", "-C", "\(dir)/src", "Clip.app"]) == 0)
            let tar = try AppClipSize(measuring: "\(dir)/Clip.tar")
            let folder = try AppClipSize(measuring: "\(dir)/src/Clip.app")
            #expect(tar.totalBytes == 4_000 && folder.totalBytes == 4_000)
            // An end record that counts fewer entries than the central directory holds is refused.
            var wrong = zipArchive([ZipEntry(name: "a", data: [1]), ZipEntry(name: "b", data: [2])])
            let end = wrong.count - 22
            wrong[end + 8] = 1
            wrong[end + 10] = 1
            try Data(wrong).write(to: URL(fileURLWithPath: "\(dir)/wrong.zip"))
            #expect { try AppClipSize(measuring: "\(dir)/wrong.zip") } throws: { e in
                (e as? BacklotError)?.code == .invalidInput
                    && "\(e)".contains("counts 1 entries, but the central directory holds 2")
            }
            // A path that is not there is invalid input (exit status 2), not a failure.
            #expect { try AppClipSize(measuring: "\(dir)/missing.zip") } throws: { e in
                (e as? BacklotError)?.code == .invalidInput
            }
        }
    }

    @Test func zip64SizesAndEndRecordsAreRead() throws {
        try withTemporaryDirectory { dir in
            let bytes = zipArchive(
                [
                    ZipEntry(name: "Clip.app/Small", data: [UInt8](repeating: 0x41, count: 10)),
                    ZipEntry(
                        name: "Clip.app/Huge", data: [UInt8](repeating: 0x42, count: 20), zip64Size: 5_000_000_000),
                ], zip64End: true)
            try Data(bytes).write(to: URL(fileURLWithPath: "\(dir)/Clip.zip"))
            let size = try AppClipSize(measuring: "\(dir)/Clip.zip")
            #expect(size.totalBytes == 5_000_000_010)
            #expect(size.largest(1) == [AppClipSize.File(path: "Clip.app/Huge", bytes: 5_000_000_000)])
            let report = AppClipSizeReport(size: size, minimumOS: 17, invocations: .digital, demoLink: false)
            #expect(report.isOver && report.overflowBytes == 4_900_000_010)
        }
    }

    @Test func truncatedOrGarbageZipsAreRefusedNamingTheOffset() throws {
        try withTemporaryDirectory { dir in
            let good = zipArchive([ZipEntry(name: "Clip.app/Clip", data: [UInt8](repeating: 0x41, count: 100))])
            var wrongSignature = good
            let directoryOffset = 30 + "Clip.app/Clip".utf8.count + 100
            wrongSignature[directoryOffset] = 0x00  // the central directory entry's PK\1\2
            var pastTheEnd = good
            pastTheEnd[good.count - 6] = 0xFF  // the central directory's offset, now beyond the end record
            let samples: [(String, [UInt8])] = [
                ("truncated.zip", Array(good.prefix(good.count - 10))),
                ("garbage.zip", [UInt8](repeating: 0x5A, count: 300)),
                ("tiny.zip", [0x50, 0x4B, 0x05, 0x06]),
                ("signature.zip", wrongSignature),
                ("offset.zip", pastTheEnd),
            ]
            for (name, bytes) in samples {
                try Data(bytes).write(to: URL(fileURLWithPath: "\(dir)/\(name)"))
                do {
                    _ = try AppClipSize(measuring: "\(dir)/\(name)")
                    Issue.record("\(name) was accepted")
                } catch let error as BacklotError {
                    #expect(error.code == .invalidInput, "\(name)")
                    #expect(error.context?.contains("at offset") == true, "\(name): \(error)")
                }
            }
        }
    }

    @Test(arguments: ["gnu", "posix", "ustar"])
    func aTarMadeByTarIsMeasured(format: String) throws {
        try withTemporaryDirectory { dir in
            let longFolder = "Clip.app/" + String(repeating: "d", count: 60)
            // over 100 bytes: 'L', pax path or ustar prefix
            let longFile = longFolder + "/" + String(repeating: "f", count: 60) + ".bin"
            try writeFile("\(dir)/src/Clip.app/Clip", bytes: 1_000)
            try writeFile("\(dir)/src/Clip.app/Info.plist", bytes: 513)
            try writeFile("\(dir)/src/Clip.app/empty", bytes: 0)
            try writeFile("\(dir)/src/\(longFile)", bytes: 700)
            try FileManager.default.createSymbolicLink(atPath: "\(dir)/src/Clip.app/link", withDestinationPath: "Clip")
            let status = try runTool(
                "/usr/bin/tar", ["--format=\(format)", "-cf", "\(dir)/Clip.tar", "-C", "\(dir)/src", "."])
            #expect(status == 0)

            let size = try AppClipSize(measuring: "\(dir)/Clip.tar")
            #expect(size.form == .tar)
            #expect(size.totalBytes == 2_213)
            #expect(
                Set(size.files.map(\.path)) == ["Clip.app/Clip", "Clip.app/Info.plist", "Clip.app/empty", longFile])
            #expect(size.largest(1) == [AppClipSize.File(path: "Clip.app/Clip", bytes: 1_000)])
        }
    }

    @Test func truncatedOrGarbageTarsAreRefused() throws {
        try withTemporaryDirectory { dir in
            try writeFile("\(dir)/src/Clip", bytes: 5_000)
            #expect(try runTool("/usr/bin/tar", ["-cf", "\(dir)/good.tar", "-C", "\(dir)/src", "Clip"]) == 0)
            let good = try [UInt8](Data(contentsOf: URL(fileURLWithPath: "\(dir)/good.tar")))
            let samples: [(String, [UInt8])] = [
                ("truncated.tar", Array(good.prefix(2_000))),
                ("garbage.tar", [UInt8](repeating: 0x41, count: 1_024)),
                ("short.tar", [UInt8](repeating: 0, count: 100)),
            ]
            for (name, bytes) in samples {
                try Data(bytes).write(to: URL(fileURLWithPath: "\(dir)/\(name)"))
                do {
                    _ = try AppClipSize(measuring: "\(dir)/\(name)")
                    Issue.record("\(name) was accepted")
                } catch let error as BacklotError {
                    #expect(error.code == .invalidInput, "\(name)")
                    #expect(error.context?.contains("at offset") == true, "\(name): \(error)")
                }
            }
        }
    }

    @Test func otherFormsAreRefusedSayingWhichAreAccepted() throws {
        try withTemporaryDirectory { dir in
            try writeFile("\(dir)/Clip.rar", bytes: 10)
            try writeFile("\(dir)/Clip.tar.gz", bytes: 10)
            for (path, phrase) in [
                ("\(dir)/Clip.rar", ".zip"), ("\(dir)/Clip.tar.gz", "decompress"),
                ("\(dir)/missing.app", ".app directory"),
            ] {
                do {
                    _ = try AppClipSize(measuring: path)
                    Issue.record("\(path) was accepted")
                } catch let error as BacklotError {
                    #expect(error.code == .invalidInput, "\(path)")
                    #expect(error.description.contains(phrase), "\(path): \(error)")
                }
            }
        }
    }
}

// MARK: - Helpers

/// Runs a temporary directory through `body`, then removes it.
private func withTemporaryDirectory(_ body: (String) throws -> Void) throws {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("backlot-clip-size-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: url) }
    try body(url.path)
}

/// Writes a file of `bytes` bytes, creating its folders.
private func writeFile(_ path: String, bytes: Int) throws {
    let url = URL(fileURLWithPath: path)
    try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
    try Data(repeating: 0x61, count: bytes).write(to: url)
}

/// Runs a tool and returns its exit status.
private func runTool(_ tool: String, _ arguments: [String]) throws -> Int32 {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: tool)
    process.arguments = arguments
    try process.run()
    process.waitUntilExit()
    return process.terminationStatus
}

/// One entry of a hand-made ZIP archive (stored, CRCs left 0: the size reader doesn't check them).
private struct ZipEntry {
    var name: String
    var data: [UInt8]
    var mode: Int = 0o100644
    /// A size declared in a ZIP64 extra field (0x0001) instead of the 32-bit fields.
    var zip64Size: UInt64? = nil
}

/// Little-endian fields, one per call.
private struct ByteWriter {
    var bytes: [UInt8] = []
    mutating func u16(_ v: Int) { append(UInt64(v), count: 2) }
    mutating func u32(_ v: Int) { append(UInt64(v), count: 4) }
    mutating func u64(_ v: UInt64) { append(v, count: 8) }
    mutating func raw(_ b: [UInt8]) { bytes += b }
    private mutating func append(_ v: UInt64, count: Int) {
        for k in 0..<count { bytes.append(UInt8(truncatingIfNeeded: v >> (8 * k))) }
    }
}

/// A ZIP archive: local headers and data, the central directory, a ZIP64 end record and locator
/// when asked, and the end of central directory record with its comment.
private func zipArchive(_ entries: [ZipEntry], comment: String = "", zip64End: Bool = false) -> [UInt8] {
    var w = ByteWriter()
    var central = ByteWriter()
    for e in entries {
        let name = Array(e.name.utf8)
        let offset = w.bytes.count
        w.u32(0x0403_4B50)
        w.u16(20)
        w.u16(0)
        w.u16(0)
        w.u16(0)
        w.u16(0)
        w.u32(0)
        w.u32(e.data.count)
        w.u32(e.data.count)
        w.u16(name.count)
        w.u16(0)
        w.raw(name)
        w.raw(e.data)

        var extra = ByteWriter()
        var declared = e.data.count
        if let big = e.zip64Size {
            extra.u16(0x0001)
            extra.u16(16)
            extra.u64(big)
            extra.u64(UInt64(e.data.count))
            declared = 0xFFFF_FFFF
        }
        central.u32(0x0201_4B50)
        central.u16(0x031E)
        central.u16(20)
        central.u16(0)
        central.u16(0)
        central.u16(0)
        central.u16(0)
        central.u32(0)
        central.u32(declared)
        central.u32(declared)
        central.u16(name.count)
        central.u16(extra.bytes.count)
        central.u16(0)
        central.u16(0)
        central.u16(0)
        central.u32(e.mode << 16)
        central.u32(offset)
        central.raw(name)
        central.raw(extra.bytes)
    }
    let directoryOffset = w.bytes.count
    w.raw(central.bytes)
    let count = entries.count
    if zip64End {
        let recordOffset = w.bytes.count
        w.u32(0x0606_4B50)
        w.u64(44)
        w.u16(45)
        w.u16(45)
        w.u32(0)
        w.u32(0)
        w.u64(UInt64(count))
        w.u64(UInt64(count))
        w.u64(UInt64(central.bytes.count))
        w.u64(UInt64(directoryOffset))
        w.u32(0x0706_4B50)
        w.u32(0)
        w.u64(UInt64(recordOffset))
        w.u32(1)
        w.u32(0x0605_4B50)
        w.u16(0)
        w.u16(0)
        w.u16(0xFFFF)
        w.u16(0xFFFF)
        w.u32(0xFFFF_FFFF)
        w.u32(0xFFFF_FFFF)
    } else {
        w.u32(0x0605_4B50)
        w.u16(0)
        w.u16(0)
        w.u16(count)
        w.u16(count)
        w.u32(central.bytes.count)
        w.u32(directoryOffset)
    }
    let commentBytes = Array(comment.utf8)
    w.u16(commentBytes.count)
    w.raw(commentBytes)
    return w.bytes
}
