import BacklotAppClips
import BacklotBasics
import BacklotTestSupport
import Foundation
import Testing

/// Sizes in crafted tar and ZIP headers that do not fit: a clear error naming the offset, never a trap.
@Suite struct ArchiveNumberTests {
    /// One 512-byte tar header with its checksum computed; `size` is the raw 12-byte size field.
    static func tarHeader(name: String, type: UInt8 = UInt8(ascii: "0"), size: [UInt8]) -> [UInt8] {
        var h = [UInt8](repeating: 0, count: 512)
        func put(_ bytes: [UInt8], at offset: Int) { for (i, b) in bytes.enumerated() { h[offset + i] = b } }
        put(Array(name.utf8), at: 0)
        put(Array("0000644\0".utf8), at: 100)
        put(Array("0000000\0".utf8), at: 108)
        put(Array("0000000\0".utf8), at: 116)
        precondition(size.count == 12)
        put(size, at: 124)
        put(Array("00000000000\0".utf8), at: 136)
        h[156] = type
        put(Array("ustar\0".utf8) + Array("00".utf8), at: 257)
        put([UInt8](repeating: 0x20, count: 8), at: 148)
        let sum = h.reduce(0) { $0 + Int($1) }
        put(Array(String(sum, radix: 8).leftPadded(6).utf8) + [0, 0x20], at: 148)
        return h
    }

    static func octal(_ n: UInt64) -> [UInt8] { Array(String(n, radix: 8).leftPadded(11).utf8) + [0] }

    /// A GNU base-256 size field holding the 11 bytes given (big-endian), the first byte's high bit set.
    static func base256(_ tail: [UInt8], first: UInt8 = 0x80) -> [UInt8] {
        [first] + [UInt8](repeating: 0, count: 11 - tail.count) + tail
    }

    func measure(_ bytes: [UInt8], as name: String = "Clip.tar") throws -> BacklotError? {
        let dir = try TemporaryDirectory("archive-numbers")
        defer { dir.remove() }
        let path = try dir.write(name, bytes)
        do {
            _ = try AppClipSize(measuring: path)
            return nil
        } catch let e as BacklotError {
            return e
        }
    }

    @Test(arguments: [
        ("8 GiB in octal", octal(0o77777777777)),
        ("2^63 in base-256", base256([0x80, 0, 0, 0, 0, 0, 0, 0])),
        ("2^64 - 1 in base-256", base256([UInt8](repeating: 0xFF, count: 8))),
        ("2^72 in base-256", base256([1, 0, 0, 0, 0, 0, 0, 0, 0])),
        ("a negative base-256", base256([1], first: 0xFF)),
        ("not octal", Array("12a\0\0\0\0\0\0\0\0\0".utf8)),
        ("a decimal 9", Array("00000000009\0".utf8)),
    ])
    func aTarSizeThatDoesNotFitIsRefused(_ what: String, _ field: [UInt8]) throws {
        let archive = Self.tarHeader(name: "Clip.app/Clip", size: field) + [UInt8](repeating: 0, count: 1024)
        let e = try #require(try measure(archive), "\(what) was accepted")
        #expect(e.code == .invalidInput && e.exitStatus == 2, "\(what): \(e)")
        #expect(e.context?.contains("at offset 0") == true, "\(what): \(e)")
    }

    @Test(arguments: [
        "18446744073709551616", "9223372036854775808", "1000000000000000000000000000000", "-1", "1e3", "+5", "0x10",
        "abc", "",
    ])
    func aPaxSizeThatDoesNotFitIsRefused(_ value: String) throws {
        // "LENGTH size=VALUE\n", LENGTH counting its own digits.
        let body = " size=\(value)\n"
        var length = body.utf8.count + 1
        while String(length).utf8.count + body.utf8.count != length { length += 1 }
        let record = Array((String(length) + body).utf8)
        var archive = Self.tarHeader(
            name: "PaxHeaders/Clip", type: UInt8(ascii: "x"), size: Self.octal(UInt64(record.count)))
        archive += record + [UInt8](repeating: 0, count: 512 - record.count)
        archive += Self.tarHeader(name: "Clip.app/Clip", size: Self.octal(0)) + [UInt8](repeating: 0, count: 1024)
        let e = try #require(try measure(archive), "pax size \(value) was accepted")
        #expect(e.code == .invalidInput, "\(value): \(e)")
        // 2^63 is a whole number: refused because the file does not hold that many bytes.
        #expect(e.message.contains("pax size") || e.message.contains("declares"), "\(value): \(e)")
    }

    /// A sparse file of 2 GiB whose end record says its central directory is the 1 GiB before it:
    /// every offset checks out, but that is not read into memory.
    @Test func aZipCentralDirectoryLargerThanItsBoundIsNotRead() throws {
        func le(_ v: UInt64, _ n: Int) -> [UInt8] { (0..<n).map { UInt8(truncatingIfNeeded: v >> (8 * UInt64($0))) } }
        let dir = try TemporaryDirectory("archive-numbers")
        defer { dir.remove() }
        let path = try dir.write("Clip.zip", [])
        let directorySize: UInt64 = 1 << 30
        let endOffset: UInt64 = 2 << 30
        #expect(truncate(path, off_t(endOffset)) == 0)
        let end =
            le(0x0605_4B50, 4) + le(0, 2) + le(0, 2) + le(1, 2) + le(1, 2) + le(directorySize, 4)
            + le(endOffset - directorySize, 4) + le(0, 2)
        let handle = try #require(FileHandle(forWritingAtPath: path))
        try handle.seek(toOffset: endOffset)
        try handle.write(contentsOf: Data(end))
        try handle.close()
        let e = #expect(throws: BacklotError.self) { _ = try AppClipSize(measuring: path) }
        #expect(e?.message.contains("at most 256 MiB are read") == true, "\(String(describing: e))")
    }

    @Test func aZipWhoseZip64RecordClaimsHugeSizesIsRefused() throws {
        // An end record deferring to ZIP64, with a locator pointing at a ZIP64 record whose
        // directory size and offset are near 2^64.
        func le(_ v: UInt64, _ n: Int) -> [UInt8] { (0..<n).map { UInt8(truncatingIfNeeded: v >> (8 * UInt64($0))) } }
        var zip64 = le(0x0606_4B50, 4) + le(44, 8) + le(45, 2) + le(45, 2) + le(0, 4) + le(0, 4)
        zip64 += le(1, 8) + le(1, 8) + le(UInt64.max, 8) + le(UInt64.max - 10, 8)
        let locator = le(0x0706_4B50, 4) + le(0, 4) + le(0, 8) + le(1, 4)
        let end =
            le(0x0605_4B50, 4) + le(0, 2) + le(0, 2) + le(0xFFFF, 2) + le(0xFFFF, 2) + le(0xFFFF_FFFF, 4)
            + le(0xFFFF_FFFF, 4) + le(0, 2)
        let e = try #require(try measure(zip64 + locator + end, as: "Clip.zip"))
        #expect(e.code == .invalidInput && e.context?.contains("at offset") == true, "\(e)")
    }
}

extension String {
    fileprivate func leftPadded(_ width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
