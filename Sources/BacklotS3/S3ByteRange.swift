/// A byte range of an object to read (`Range: bytes=…`).
public enum S3ByteRange: Sendable, Hashable, CustomStringConvertible {
    /// Bytes `first` to `last`, both included.
    case bytes(UInt64, UInt64)
    /// From byte `first` to the end.
    case from(UInt64)
    /// The last `count` bytes.
    case suffix(UInt64)

    /// The `Range` header's value.
    public var description: String {
        switch self {
        case .bytes(let a, let b): "bytes=\(a)-\(b)"
        case .from(let a): "bytes=\(a)-"
        case .suffix(let n): "bytes=-\(n)"
        }
    }

    /// The number of bytes asked for, when the range says (`bytes` only).
    var length: UInt64? {
        if case .bytes(let a, let b) = self, b >= a { return b - a + 1 }
        return nil
    }

    /// The first byte asked for, when the range says.
    var first: UInt64? {
        switch self {
        case .bytes(let a, _), .from(let a): a
        case .suffix: nil
        }
    }
}
