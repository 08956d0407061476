import BacklotBasics

/// Turns the `?` placeholders the repository writes (SQLite's) into PostgreSQL's `$1, $2, …`,
/// leaving alone any `?` inside 'text', "identifiers", `--` comments and `/* */` comments.
///
/// ```swift
/// try PostgresPlaceholders.numbered("SELECT '?' FROM t WHERE a = ? AND b = ?", expecting: 2)
/// // "SELECT '?' FROM t WHERE a = $1 AND b = $2"
/// ```
public enum PostgresPlaceholders {
    /// - Throws: ``BacklotError/Code/invalidInput`` when the statement has not `count` placeholders.
    public static func numbered(_ sql: String, expecting count: Int) throws -> String {
        enum Mode { case plain, single, double, line, block }
        var mode = Mode.plain
        var out = ""
        out.reserveCapacity(sql.utf8.count + 8)
        var n = 0
        var previous: Character = " "
        for c in sql {
            switch mode {
            case .plain:
                if c == "?" {
                    n += 1
                    out += "$\(n)"
                    previous = " "
                    continue
                }
                if c == "'" {
                    mode = .single
                } else if c == "\"" {
                    mode = .double
                } else if c == "-" && previous == "-" {
                    mode = .line
                } else if c == "*" && previous == "/" {
                    mode = .block
                }
            case .single:
                if c == "'" { mode = .plain }  // '' (an escaped quote) leaves and re-enters at once
            case .double:
                if c == "\"" { mode = .plain }
            case .line:
                if c == "\n" { mode = .plain }
            case .block:
                if c == "/" && previous == "*" {
                    mode = .plain
                    out.append(c)
                    previous = " "
                    continue
                }
            }
            out.append(c)
            previous = c
        }
        guard n == count else {
            throw BacklotError(
                .invalidInput, "the statement has \(n) placeholders but \(count) values were given",
                context: String(sql.prefix(60)))
        }
        return out
    }
}
