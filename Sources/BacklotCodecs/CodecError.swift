/// Why a compressed block could not be decoded (or encoded): what is wrong, in words that name the
/// codec. Callers add where (the archive, the block, the offset).
public struct CodecError: Error, Sendable, Hashable, CustomStringConvertible {
    public let message: String

    public init(_ message: String) { self.message = message }

    public var description: String { message }
}
