import BacklotBasics

/// What a device can use, which picks the variant of a pack it installs
/// (``PackVariants/choice(for:)``): the texture formats its GPU reads and its tier.
///
/// Detected on Linux by BacklotClient's `DeviceProfile.detected`; set by an app's configuration
/// (`BacklotDeviceProfile`) or `backlot fetch --device textureFormat=astc,deviceTier=high`.
///
/// ```swift
/// let profile = try DeviceProfile(parsing: "textureFormat=etc2,deviceTier=1")
/// ```
public struct DeviceProfile: Sendable, Hashable, CustomStringConvertible {
    /// The texture formats the device reads, best first (``TextureFormat/preferenceOrder``).
    public var textureFormats: [String]
    /// Its tier (``DeviceTier``).
    public var deviceTier: Int

    public init(textureFormats: [String], deviceTier: Int) {
        self.textureFormats = TextureFormat.preferenceOrder.filter(Set(textureFormats).contains)
        self.deviceTier = min(max(deviceTier, DeviceTier.range.lowerBound), DeviceTier.range.upperBound)
    }

    /// Reads `textureFormat=astc,deviceTier=high`: `textureFormat` takes one format or several
    /// joined by `+` (`astc+etc2`), `deviceTier` a digit or `low`, `medium`, `high`. A key left out
    /// keeps its value from `base`.
    /// - Throws: ``BacklotError/Code/invalidInput`` naming the key or value that is wrong.
    public init(parsing text: String, base: DeviceProfile = DeviceProfile(textureFormats: [], deviceTier: 0)) throws {
        var profile = base
        for pair in text.split(separator: ",") {
            let parts = pair.split(separator: "=", maxSplits: 1).map { String($0).trimmingSpaces }
            guard parts.count == 2 else {
                throw BacklotError(
                    .invalidInput, "\"\(pair)\" is not key=value", context: "device profile \"\(text)\"",
                    hint: "write textureFormat=astc,deviceTier=high")
            }
            switch parts[0] {
            case "textureFormat":
                let formats = parts[1].split(separator: "+").map(String.init)
                if let unknown = formats.first(where: { !TextureFormat.preferenceOrder.contains($0) }) {
                    throw BacklotError(
                        .invalidInput, "\"\(unknown)\" is not a texture format Backlot knows",
                        context: "device profile \"\(text)\"",
                        hint: "use one of \(TextureFormat.preferenceOrder.joined(separator: ", "))")
                }
                profile.textureFormats = TextureFormat.preferenceOrder.filter(Set(formats).contains)
            case "deviceTier":
                guard let tier = DeviceTier.value(of: parts[1]) else {
                    throw BacklotError(
                        .invalidInput, "\"\(parts[1])\" is not a device tier", context: "device profile \"\(text)\"",
                        hint: "use low, medium, high or a digit 0 to 9")
                }
                profile.deviceTier = tier
            default:
                throw BacklotError(
                    .invalidInput, "unknown key \"\(parts[0])\"", context: "device profile \"\(text)\"",
                    hint: Suggestion.closest(to: parts[0], in: ["textureFormat", "deviceTier"]).map {
                        "did you mean \($0)?"
                    }
                        ?? "the keys are textureFormat and deviceTier")
            }
        }
        self = profile
    }

    /// `textureFormat=astc+etc2,deviceTier=2`: what ``init(parsing:base:)`` reads.
    public var description: String {
        let formats = textureFormats.isEmpty ? TextureFormat.uncompressed : textureFormats.joined(separator: "+")
        return "textureFormat=\(formats),deviceTier=\(deviceTier)"
    }
}

extension String {
    fileprivate var trimmingSpaces: String {
        String(drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
    }
}
