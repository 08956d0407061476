/// What an object or a part is uploaded from: bytes in memory, or a range of a file (read as it is sent).
public enum S3Body: Sendable {
    case bytes([UInt8])
    /// `length` bytes of the file at `path` from `offset`.
    case file(path: String, offset: UInt64, length: UInt64)

    /// How many bytes it holds.
    public var count: UInt64 {
        switch self {
        case .bytes(let b): UInt64(b.count)
        case .file(_, _, let length): length
        }
    }
}
