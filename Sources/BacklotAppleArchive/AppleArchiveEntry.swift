import BacklotCrypto

/// One entry of an Apple Archive, as its header describes it (docs/format.md §13).
public struct AppleArchiveEntry: Sendable, Hashable {
    /// The entry's type (`TYP`).
    public enum Kind: UInt8, Sendable, Hashable {
        case file = 0x46  // F
        case directory = 0x44  // D
        case symbolicLink = 0x4C  // L
        case fifo = 0x50  // P
        case characterDevice = 0x43  // C
        case blockDevice = 0x42  // B
        case socket = 0x53  // S
        case whiteout = 0x57  // W
        case door = 0x52  // R
        case port = 0x54  // T
        case metadata = 0x4D  // M

        /// `file`, `directory`, …
        public var name: String {
            switch self {
            case .file: "file"
            case .directory: "directory"
            case .symbolicLink: "symbolic link"
            case .fifo: "FIFO"
            case .characterDevice: "character device"
            case .blockDevice: "block device"
            case .socket: "socket"
            case .whiteout: "whiteout"
            case .door: "door"
            case .port: "port"
            case .metadata: "metadata"
            }
        }
    }

    public var kind: Kind
    /// `PAT`: relative, `/`-separated; empty for the archive's root folder.
    public var path: String
    /// `LNK`, for a symbolic link.
    public var linkTarget: String?
    /// `MOD`: the permission bits.
    public var mode: UInt16?
    /// `SIZ`, when the header has it (it must then be the data's size).
    public var declaredSize: UInt64?
    /// The bytes of the `DAT` blob (0 without one).
    public var dataSize: UInt64
    /// `CKS` (CRC-32) and `SH2` (SHA-256) of the data, when the header has them; checked.
    public var crc32: UInt32?
    public var sha256: SHA256Digest?
    /// The header's fields, each its key and subtype (`TYP1`, `PATP`, `DATB`), in order.
    public var fields: [String]
    /// Where the entry starts in the archive's plain (decompressed) stream.
    public var offset: UInt64
}
