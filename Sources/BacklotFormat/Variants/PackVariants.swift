import BacklotBasics
import BacklotJSON

/// The variants a pack's files come in (`docs/format.md` §3.2): files made for one GPU texture
/// format, or for one device tier, beside the files every device gets.
///
/// A file belongs to a variant when one component of its path ends in a **variant marker**,
/// Google Play's folder suffixes: `Textures#tcf_astc/Rock.ktx` is the `astc` texture format's,
/// `Levels#tier_2/City.bin` device tier 2's. A device installs the shared files and, in each
/// dimension, the files of the one value chosen for it (``choice(for:)``), with the marker removed:
/// both of the above install as `Textures/Rock.ktx` and `Levels/City.bin`.
///
/// ```swift
/// let choice = index.metadata.variants?.choice(for: DeviceProfile(textureFormats: ["etc2"], deviceTier: 1))
/// let installed = try index.selecting(choice ?? VariantChoice(), source: url)
/// ```
public struct PackVariants: Sendable, Hashable {
    /// The texture formats the pack's files are made in, in ``TextureFormat/preferenceOrder``.
    public let textureFormats: [String]
    /// The format a device that reads none of ``textureFormats`` gets; one of them. Nil only when
    /// ``textureFormats`` is empty.
    public let defaultTextureFormat: String?
    /// The device tiers the pack's files are made for, ascending.
    public let deviceTiers: [Int]

    /// - Throws: ``BacklotError/Code/invalidInput`` when a value is unknown, or texture formats
    ///   are listed without a default among them.
    public init(textureFormats: [String], defaultTextureFormat: String?, deviceTiers: [Int]) throws {
        for format in textureFormats where !TextureFormat.preferenceOrder.contains(format) {
            throw BacklotError(
                .invalidInput, "\"\(format)\" is not a texture format Backlot knows",
                hint: "use one of \(TextureFormat.preferenceOrder.joined(separator: ", "))")
        }
        for tier in deviceTiers where !DeviceTier.range.contains(tier) {
            throw BacklotError(.invalidInput, "device tier \(tier) is out of range", hint: "tiers are 0 to 9")
        }
        if !textureFormats.isEmpty {
            guard let defaultTextureFormat, textureFormats.contains(defaultTextureFormat) else {
                throw BacklotError(
                    .invalidInput,
                    "the pack has files for the texture formats \(TextureFormat.preferenceOrder.filter(Set(textureFormats).contains).joined(separator: ", ")) but no default among them",
                    hint:
                        "name the format a device that reads none of them gets: \"variants\": {\"textureFormat\": {\"default\": \"etc2\"}}"
                )
            }
        }
        self.textureFormats = TextureFormat.preferenceOrder.filter(Set(textureFormats).contains)
        self.defaultTextureFormat = textureFormats.isEmpty ? nil : defaultTextureFormat
        self.deviceTiers = Array(Set(deviceTiers)).sorted()
    }

    /// True when the pack has no variant: every file is for every device.
    public var isEmpty: Bool { textureFormats.isEmpty && deviceTiers.isEmpty }

    /// The values a device with `profile` gets: of the pack's texture formats, the first in
    /// ``TextureFormat/preferenceOrder`` the device reads, else the pack's default; of its tiers,
    /// the highest not above the device's, else the lowest.
    public func choice(for profile: DeviceProfile) -> VariantChoice {
        let format =
            textureFormats.first { profile.textureFormats.contains($0) || $0 == TextureFormat.uncompressed }
            ?? defaultTextureFormat
        let tier = deviceTiers.last { $0 <= profile.deviceTier } ?? deviceTiers.first
        return VariantChoice(textureFormat: format, deviceTier: tier)
    }

    /// Every choice a device could get, one for each pair of values (for size checks that must
    /// hold whatever the device).
    public var everyChoice: [VariantChoice] {
        let formats: [String?] = textureFormats.isEmpty ? [nil] : textureFormats
        let tiers: [Int?] = deviceTiers.isEmpty ? [nil] : deviceTiers
        return formats.flatMap { f in tiers.map { VariantChoice(textureFormat: f, deviceTier: $0) } }
    }

    /// The summary stored in a pack's metadata and listed in catalogs:
    /// `{"deviceTier":{"values":[0,2]},"textureFormat":{"default":"etc2","values":["astc","etc2"]}}`.
    public var json: JSONNode {
        var members: [JSONMember] = []
        if !deviceTiers.isEmpty {
            let values = JSONNode(.array(deviceTiers.map { JSONNode(.number(String($0))) }))
            members.append(
                JSONMember(key: "deviceTier", value: JSONNode(.object([JSONMember(key: "values", value: values)]))))
        }
        if let defaultTextureFormat {
            let values = JSONNode(.array(textureFormats.map { JSONNode(.string($0)) }))
            members.append(
                JSONMember(
                    key: "textureFormat",
                    value: JSONNode(
                        .object([
                            JSONMember(key: "default", value: JSONNode(.string(defaultTextureFormat))),
                            JSONMember(key: "values", value: values),
                        ]))))
        }
        return JSONNode(.object(members))
    }

    /// Reads ``json``'s form (from an index's metadata or a catalog).
    /// - Throws: ``BacklotError/Code/invalidInput`` naming what is wrong.
    public init(json node: JSONNode, source: String) throws {
        guard let members = node.objectMembers else {
            throw BacklotError(.invalidInput, "\"variants\" is not an object", context: source)
        }
        var formats: [String] = []
        var defaultFormat: String?
        var tiers: [Int] = []
        for member in members {
            let values = member.value["values"]?.arrayElements ?? []
            switch member.key {
            case "textureFormat":
                formats = try values.map {
                    guard let text = $0.stringValue else {
                        throw BacklotError(.invalidInput, "a texture format is not a string", context: source)
                    }
                    return text
                }
                defaultFormat = member.value["default"]?.stringValue
            case "deviceTier":
                tiers = try values.map {
                    guard case .number(let text) = $0.kind, let tier = Int(text) else {
                        throw BacklotError(.invalidInput, "a device tier is not a whole number", context: source)
                    }
                    return tier
                }
            default:
                throw BacklotError(
                    .invalidInput, "\"variants\" has the unknown dimension \"\(member.key)\"", context: source,
                    hint: "a newer Backlot made this pack: upgrade")
            }
            guard !values.isEmpty, Set(values.map { $0.serialized() }).count == values.count else {
                throw BacklotError(
                    .invalidInput, "\"variants.\(member.key).values\" is empty or lists a value twice", context: source)
            }
        }
        do {
            try self.init(textureFormats: formats, defaultTextureFormat: defaultFormat, deviceTiers: tiers)
        } catch let error as BacklotError {
            throw BacklotError(error.code, error.message, context: source, hint: error.hint)
        }
        guard !isEmpty else { throw BacklotError(.invalidInput, "\"variants\" lists no dimension", context: source) }
    }
}
