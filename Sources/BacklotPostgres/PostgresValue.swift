import BacklotBasics
import BacklotStore
import CPostgreSQL

/// Converts PostgreSQL's text-format results to ``Database/Value`` by column type, with checked
/// conversions: a value that does not fit (an integer past 64 bits, malformed bytes) is an error.
enum PostgresValue {
    static let bool: Oid = 16, bytea: Oid = 17, int8: Oid = 20, int2: Oid = 21, int4: Oid = 23, oid: Oid = 26
    static let float4: Oid = 700, float8: Oid = 701, numeric: Oid = 1700

    /// - Throws: ``BacklotError/Code/io`` naming the column when the text is not a value of its type.
    static func decode(_ bytes: UnsafeRawBufferPointer, type: Oid, column: String, sql: String) throws -> Database.Value
    {
        let text = String(decoding: bytes, as: UTF8.self)
        func bad() -> BacklotError {
            BacklotError(
                .io,
                "PostgreSQL returned \"\(text.prefix(40))\" for the column \(column), which does not fit its type (in \(sql.prefix(60)))"
            )
        }
        switch type {
        case int8, int4, int2, oid:
            guard let v = Int64(text) else { throw bad() }
            return .integer(v)
        case bool:
            guard text == "t" || text == "f" else { throw bad() }
            return .integer(text == "t" ? 1 : 0)
        case float4, float8:
            guard let v = Double(text) else { throw bad() }
            return .real(v)
        case numeric:
            if let v = Int64(text) { return .integer(v) }
            guard let v = Double(text) else { throw bad() }
            return .real(v)
        case bytea:
            guard let v = hexBytes(bytes) else { throw bad() }
            return .blob(v)
        default:
            return .text(text)
        }
    }

    /// `\x0a1b…` (bytea's hex output) as bytes.
    static func hexBytes(_ bytes: UnsafeRawBufferPointer) -> [UInt8]? {
        guard bytes.count >= 2, bytes[0] == UInt8(ascii: "\\"), bytes[1] == UInt8(ascii: "x"), bytes.count % 2 == 0
        else { return nil }
        func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count - 2) / 2)
        var i = 2
        while i < bytes.count {
            guard let high = nibble(bytes[i]), let low = nibble(bytes[i + 1]) else { return nil }
            out.append(high << 4 | low)
            i += 2
        }
        return out
    }
}
