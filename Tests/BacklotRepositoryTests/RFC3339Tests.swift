import BacklotBasics
import BacklotProtocol
import BacklotTestSupport
import Foundation
import Testing

/// The hand-written RFC 3339 reader and writer agree with Foundation's `ISO8601DateFormatter`
/// (internet date-time) on every moment and text they are given, and refuse what it refuses.
@Suite struct RFC3339Tests {
    func foundation() -> ISO8601DateFormatter {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime]
        f.timeZone = TimeZone(identifier: "UTC")
        return f
    }

    @Test func writingAndReadingAgreeWithFoundationOnSeededMoments() {
        print("RFC3339Tests seed 31")
        var g = SeededGenerator(seed: 31)
        let f = foundation()
        // From 1900 to 2200, and the edges of leap days, months and years.
        var moments: [Double] = (0..<5_000).map { _ in -2_208_988_800 + Double(g.next() % 9_467_280_000) }
        moments += [0, -1, 951_782_400, 951_868_799, 4_107_542_400, 1_709_164_800, 1_709_251_199, 253_402_300_799]
        for t in moments {
            let date = Date(timeIntervalSince1970: t + 0.75)
            #expect(RFC3339.string(date) == f.string(from: date), "at \(t)")
            #expect(RFC3339.date(RFC3339.string(date)) == Date(timeIntervalSince1970: t))
        }
    }

    @Test(arguments: [
        "2026-12-03T09:41:00Z", "2024-02-29T23:59:59Z", "2026-12-03T09:41:00+02:00", "2026-12-03T09:41:00-11:30",
        "1999-12-31T23:59:59Z", "2000-02-29T12:00:00Z",
    ])
    func aValidTextReadsAsFoundationReadsIt(text: String) {
        #expect(RFC3339.date(text) != nil && RFC3339.date(text) == foundation().date(from: text), "\(text)")
    }

    /// Stricter than Foundation, which reads 29 February 2023 as 1 March, an hour 24 as the next
    /// day, an offset without its colon and full-width digits: a signed timestamp means one moment.
    @Test(arguments: [
        "2023-02-29T00:00:00Z", "2026-04-31T00:00:00Z", "2026-12-03T24:00:00Z", "2026-12-03T09:41:00+0200",
        "2026-1\u{FF12}-03T09:41:00Z", "2026-13-01T00:00:00Z", "2026-00-10T00:00:00Z", "2026-12-03T09:60:00Z",
        "2026-12-03 09:41:00Z", "2026-12-03T09:41:00", "2026-12-03T09:41:00.5Z", "+2026-12-03T09:41:00Z",
        "2026-12-03T09:41:00+24:00", "", "2026-12-03T09:41:00z",
    ])
    func anInvalidOrAmbiguousTextIsRefused(text: String) {
        #expect(RFC3339.date(text) == nil, "\(text)")
    }
}
