import BacklotBasics

/// HTTP dates (RFC 9110 §5.6.7): `Last-Modified` is written as an IMF-fixdate
/// (`Sun, 06 Nov 1994 08:49:37 GMT`); `If-Modified-Since`, `If-Unmodified-Since` and `If-Range`
/// are read in any of the three forms a recipient must accept (IMF-fixdate, RFC 850, asctime).
///
/// Values are whole seconds since 1970 (UTC). Every field is a bounded run of digits, so parsing
/// never overflows; a date that is not one of the three forms is nil (and the condition is ignored,
/// as RFC 9110 requires).
///
/// ```swift
/// HTTPDate.format(784111777)                               // "Sun, 06 Nov 1994 08:49:37 GMT"
/// HTTPDate.parse("Sunday, 06-Nov-94 08:49:37 GMT")         // 784111777
/// ```
public enum HTTPDate {
    static let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    static let longDays = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]
    static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// The IMF-fixdate of `seconds` since 1970 (UTC).
    public static func format(_ seconds: Int64) -> String {
        let day = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = seconds - day * 86_400
        let (y, m, d) = CivilDate.date(fromDays: day)
        let weekday = Int(((day % 7) + 11) % 7)  // 1970-01-01 was a Thursday
        // Written as bytes: the server dates every file it answers with.
        var out: [UInt8] = []
        out.reserveCapacity(29)
        func append(_ text: String) { out.append(contentsOf: text.utf8) }
        func two(_ n: Int64) {
            out.append(UInt8(48 + n / 10 % 10))
            out.append(UInt8(48 + n % 10))
        }
        append(days[weekday])
        append(", ")
        two(Int64(d))
        out.append(0x20)
        append(months[Int(m) - 1])
        out.append(0x20)
        append(String(y))
        out.append(0x20)
        two(secondOfDay / 3600)
        out.append(UInt8(ascii: ":"))
        two(secondOfDay / 60 % 60)
        out.append(UInt8(ascii: ":"))
        two(secondOfDay % 60)
        append(" GMT")
        return String(decoding: out, as: UTF8.self)
    }

    /// Seconds since 1970 of an HTTP date in any of the three forms, or nil.
    public static func parse(_ text: String) -> Int64? {
        let t = Array(text.utf8)
        // IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT"
        if t.count == 29, t[3] == UInt8(ascii: ","), text.hasSuffix(" GMT"),
            days.contains(String(decoding: t[0..<3], as: UTF8.self))
        {
            return build(
                day: digits(t[5..<7]), month: month(t[8..<11]), year: digits(t[12..<16]), time: Array(t[17..<25])
            )
            .flatMap { t[4] == 0x20 && t[7] == 0x20 && t[11] == 0x20 && t[16] == 0x20 ? $0 : nil }
        }
        // RFC 850: "Sunday, 06-Nov-94 08:49:37 GMT" (two-digit years: 70…99 → 19xx, else 20xx)
        if let comma = t.firstIndex(of: UInt8(ascii: ",")),
            longDays.contains(String(decoding: t[..<comma], as: UTF8.self)),
            t.count == comma + 24, text.hasSuffix(" GMT")
        {
            let r = Array(t[(comma + 1)...])
            guard r[0] == 0x20, r[3] == UInt8(ascii: "-"), r[7] == UInt8(ascii: "-"), r[10] == 0x20,
                let yy = digits(r[8..<10])
            else { return nil }
            return build(
                day: digits(r[1..<3]), month: month(r[4..<7]), year: yy < 70 ? 2000 + yy : 1900 + yy,
                time: Array(r[11..<19]))
        }
        // asctime: "Sun Nov  6 08:49:37 1994"
        if t.count == 24, days.contains(String(decoding: t[0..<3], as: UTF8.self)), t[3] == 0x20, t[7] == 0x20,
            t[10] == 0x20, t[19] == 0x20
        {
            let dayField = t[8] == 0x20 ? t[9..<10] : t[8..<10]
            return build(
                day: digits(dayField), month: month(t[4..<7]), year: digits(t[20..<24]), time: Array(t[11..<19]))
        }
        return nil
    }

    /// A run of 1…4 ASCII digits as a number (bounded, so it never overflows), or nil.
    static func digits(_ bytes: ArraySlice<UInt8>) -> Int64? {
        guard !bytes.isEmpty, bytes.count <= 4 else { return nil }
        var n: Int64 = 0
        for b in bytes {
            guard b >= UInt8(ascii: "0"), b <= UInt8(ascii: "9") else { return nil }
            n = n * 10 + Int64(b - UInt8(ascii: "0"))
        }
        return n
    }

    static func month(_ bytes: ArraySlice<UInt8>) -> Int64? {
        months.firstIndex(of: String(decoding: bytes, as: UTF8.self)).map { Int64($0) + 1 }
    }

    static func build(day: Int64?, month: Int64?, year: Int64?, time: [UInt8]) -> Int64? {
        guard let day, let month, let year, time.count == 8, time[2] == UInt8(ascii: ":"), time[5] == UInt8(ascii: ":"),
            let h = digits(time[0..<2]), let mi = digits(time[3..<5]), let s = digits(time[6..<8]),
            (1...31).contains(day), h < 24, mi < 60, s < 61
        else { return nil }
        return CivilDate.days(fromYear: year, month: month, day: day) * 86_400 + h * 3600 + mi * 60 + s
    }
}
