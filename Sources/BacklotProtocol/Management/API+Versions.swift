import BacklotBasics
import BacklotJSON

// Versions of a pack and their uploads.
extension API {
    /// A version: its upload, processing state and digest.
    public struct Version: Codable, Sendable, Hashable {
        public var app: String
        public var pack: String
        public var version: Int
        public var state: VersionState
        /// Why processing failed.
        @NullWhenAbsent public var reason: String?
        /// The archive's declared size in bytes.
        public var size: UInt64
        /// The bytes received so far (where an upload resumes).
        public var received: UInt64
        @NullWhenAbsent public var archiveSHA256: String?
        /// The bytes the pack takes once installed (known once processed).
        @NullWhenAbsent public var installSize: UInt64?
        public var format: ArchiveFormat
        /// The release notes given with the upload.
        @NullWhenAbsent public var notes: String?
        /// The texture formats and device tiers its files come in (known once processed; absent
        /// for a pack without variants).
        @NullWhenAbsent public var variants: Variants?

        public init(
            app: String, pack: String, version: Int, state: VersionState, reason: String?, size: UInt64,
            received: UInt64, archiveSHA256: String?, installSize: UInt64?, format: ArchiveFormat, notes: String?
        ) {
            self.notes = notes
            self.app = app
            self.pack = pack
            self.version = version
            self.state = state
            self.reason = reason
            self.size = size
            self.received = received
            self.archiveSHA256 = archiveSHA256
            self.installSize = installSize
            self.format = format
        }
    }

    /// A pack's variants (docs/format.md §3.2): the texture formats with the default one a device
    /// that reads none of them gets, and the device tiers.
    public struct Variants: Codable, Sendable, Hashable {
        public var textureFormats: [String]
        @NullWhenAbsent public var defaultTextureFormat: String?
        public var deviceTiers: [Int]

        public init(textureFormats: [String], defaultTextureFormat: String?, deviceTiers: [Int]) {
            self.textureFormats = textureFormats
            self.defaultTextureFormat = defaultTextureFormat
            self.deviceTiers = deviceTiers
        }
    }

    /// A pack's versions, newest first.
    public struct VersionList: Codable, Sendable, Hashable {
        public var versions: [Version]
        public init(versions: [Version]) { self.versions = versions }
    }

    /// The body of `POST …/versions`: the archive's exact size, its format (pack when absent), the
    /// manifest given to ba-package for an `.aar`, and optionally its digest (to find an existing
    /// version of the same archive instead).
    public struct VersionCreate: Codable, Sendable {
        public var size: UInt64
        public var format: ArchiveFormat?
        public var manifest: JSONNode?
        public var archiveSHA256: String?
        /// Release notes: lines of text, at most ``API/Limits/longestNotes`` characters.
        public var notes: String?

        public init(
            size: UInt64, format: ArchiveFormat? = nil, manifest: JSONNode? = nil, archiveSHA256: String? = nil,
            notes: String? = nil
        ) {
            self.notes = notes
            self.size = size
            self.format = format
            self.manifest = manifest
            self.archiveSHA256 = archiveSHA256
        }
    }
}

extension VersionState: Codable, WireEnumeration {}
extension ArchiveFormat: Codable, WireEnumeration {}
extension Role: Codable, WireEnumeration {}
extension Channel: Codable, WireEnumeration {}

/// A string enumeration of the wire: the server's reader names its cases when a body holds another value.
public protocol WireEnumeration: CaseIterable, RawRepresentable where RawValue == String {}

extension WireEnumeration {
    /// `internal, external or production`.
    public static var caseList: String {
        let names = allCases.map(\.rawValue)
        guard names.count > 1 else { return names.joined() }
        return names.dropLast().joined(separator: ", ") + " or " + (names.last ?? "")
    }
}
