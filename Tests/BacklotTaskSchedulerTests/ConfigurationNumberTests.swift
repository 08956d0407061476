import BacklotBasics
import BacklotInfoPlist
import BacklotTaskScheduler
import BacklotTestSupport
import Foundation
import Testing

/// Numbers in configuration files that do not fit: always an error naming the key, never a trap.
@Suite struct ConfigurationNumberTests {
    /// Values no duration or size key may hold, as written in JSON.
    static let outOfRange = [
        "9223372036854775808", "18446744073709551616", "1000000000000000000000000000000", "1e30", "1e400", "-1e400",
        "-1", "-9223372036854775808", "0", #""600""#, "true", "[1]",
    ]

    @Test(arguments: [
        "BacklotRefreshTaskBudget", "BacklotProcessingTaskBudget", "BacklotTaskExpirationGrace",
        "BacklotTaskFailureBackoff",
    ])
    func durationKeysRefuseWhatDoesNotFit(key: String) throws {
        let dir = try TemporaryDirectory("config-numbers")
        defer { dir.remove() }
        for value in Self.outOfRange {
            let path = try dir.write("config.json", "{\"\(key)\": \(value)}")
            do {
                _ = try TaskSchedulerConfiguration(
                    settings: try ConfigurationFile.read(path: path).dictionary ?? [:], source: path)
                Issue.record("\(key): \(value) was accepted")
            } catch let e as BacklotError {
                #expect(e.code == .invalidInput && e.exitStatus == 2, "\(value): \(e)")
                #expect(e.message.contains("the key \(key) "), "\(value): \(e)")
                #expect(e.context == path)
            }
        }
        // Fractions and whole numbers up to a year are durations.
        let fine = try dir.write("fine.json", "{\"\(key)\": 1.5}")
        _ = try TaskSchedulerConfiguration(
            settings: try ConfigurationFile.read(path: fine).dictionary ?? [:], source: fine)
        let year = try dir.write("year.json", "{\"\(key)\": 31622400}")
        _ = try TaskSchedulerConfiguration(
            settings: try ConfigurationFile.read(path: year).dictionary ?? [:], source: year)
    }

    @Test func sizeKeysTakeWholeBytesWithinInt64() throws {
        for (value, expected) in [
            (PlistValue.integer(0), UInt64(0)), (.integer(Int64.max), UInt64(Int64.max)),
            (.unsignedInteger(1 << 40), 1 << 40),
        ] {
            #expect(
                try ConfigurationKey.bytes(
                    "BacklotBandwidthLimit", in: ["BacklotBandwidthLimit": value], source: "test") == expected)
        }
        let refused: [PlistValue] = [
            .integer(-1), .integer(Int64.min), .unsignedInteger(UInt64(Int64.max) + 1), .unsignedInteger(.max),
            .real(1.5), .real(1e30), .real(.infinity), .real(-.infinity), .real(.nan), .string("12"), .bool(true),
        ]
        for value in refused {
            do {
                _ = try ConfigurationKey.bytes(
                    "BacklotBandwidthLimit", in: ["BacklotBandwidthLimit": value], source: "test.json")
                Issue.record("\(value) was accepted")
            } catch let e as BacklotError {
                #expect(e.code == .invalidInput && e.message.contains("BacklotBandwidthLimit"), "\(value): \(e)")
                #expect(e.context == "test.json")
            }
        }
    }

    @Test func propertyListNumbersAreCheckedToo() throws {
        let dir = try TemporaryDirectory("config-numbers")
        defer { dir.remove() }
        for (tag, text) in [
            ("integer", "18446744073709551615"), ("integer", "-5"), ("real", "1e400"), ("real", "1e30"),
            ("real", "-0.5"), ("string", "60"),
        ] {
            let path = try dir.write(
                "Info.plist",
                """
                <?xml version="1.0" encoding="UTF-8"?>
                <plist version="1.0"><dict><key>BacklotTaskExpirationGrace</key><\(tag)>\(text)</\(tag)></dict></plist>
                """)
            do {
                _ = try TaskSchedulerConfiguration(
                    settings: try ConfigurationFile.read(path: path).dictionary ?? [:], source: path)
                Issue.record("<\(tag)>\(text)</\(tag)> was accepted")
            } catch let e as BacklotError {
                #expect(e.code == .invalidInput && e.message.contains("BacklotTaskExpirationGrace"), "\(text): \(e)")
            }
        }
    }

    @Test func doublesBecomeIntegersOnlyThroughTheCheck() throws {
        #expect(try CheckedInteger.convert(12.9, to: Int.self, "x") == 12)
        #expect(try CheckedInteger.convert(-12.9, to: Int.self, "x") == -12)
        for bad in [Double.infinity, -.infinity, .nan, 9.3e18, -9.3e18, 1e300] {
            #expect(throws: BacklotError.self, "\(bad)") { try CheckedInteger.convert(bad, to: Int.self, "the value") }
        }
        #expect(throws: BacklotError.self) { try CheckedInteger.convert(-1.0, to: UInt64.self, "the size") }
        #expect(throws: BacklotError.self) { try CheckedInteger.convert(5.0, to: Int.self, "the grace", in: 6...10) }
        #expect(CheckedInteger.saturatingAdd(UInt64.max - 1, 5) == .max)
        #expect(CheckedInteger.saturatingAdd(Int64.min + 1, -5) == .min)
        #expect(CheckedInteger.saturatingAdd(2, 3) == 5)
        #expect(CheckedInteger.secondsText(600) == "600" && CheckedInteger.secondsText(1.5e3) == "1500")
        #expect(CheckedInteger.secondsText(.infinity) == "infinitely many")
    }
}
