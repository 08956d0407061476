/// Dates of the proleptic Gregorian calendar as days since 1970-01-01, both ways (Howard
/// Hinnant's algorithms): what the HTTP and RFC 3339 date readers and writers share, so that no
/// formatter object is made per date. Exact for every `Int64` day a date of years −10⁹…10⁹ gives.
///
/// ```swift
/// CivilDate.days(fromYear: 1970, month: 1, day: 1)   // 0
/// CivilDate.date(fromDays: 19_700)                   // (2023, 12, 10)
/// ```
public enum CivilDate {
    /// Days since 1970-01-01 of `year`-`month`-`day` (month 1…12, day 1…31; not checked).
    public static func days(fromYear year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The year, month and day of a day counted from 1970-01-01 (the inverse of ``days(fromYear:month:day:)``).
    public static func date(fromDays days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    /// Whether `year` has a 29 February.
    public static func isLeap(_ year: Int64) -> Bool { year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) }

    /// The days of `month` (1…12) in `year`.
    public static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: isLeap(year) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }
}

extension CivilDate {
    /// `YYYY-MM-DD` of a day counted from 1970-01-01.
    ///
    /// ```swift
    /// CivilDate.dayText(fromDays: 0)   // "1970-01-01"
    /// ```
    public static func dayText(fromDays days: Int64) -> String {
        let (y, m, d) = date(fromDays: days)
        func two(_ n: Int64) -> String { n < 10 ? "0\(n)" : String(n) }
        let year = String(y)
        return String(repeating: "0", count: max(0, 4 - year.count)) + year + "-" + two(m) + "-" + two(d)
    }

    /// `YYYY-MM-DD` of the UTC day a time falls on (seconds since 1970).
    public static func utcDayText(secondsSince1970 seconds: Double) -> String {
        dayText(fromDays: Int64((seconds / 86_400).rounded(.down)))
    }
}
