/// The value of each dimension a device gets (``PackVariants/choice(for:)``); nil where the pack
/// has no variant in that dimension.
public struct VariantChoice: Sendable, Hashable, CustomStringConvertible {
    public var textureFormat: String?
    public var deviceTier: Int?

    public init(textureFormat: String? = nil, deviceTier: Int? = nil) {
        self.textureFormat = textureFormat
        self.deviceTier = deviceTier
    }

    /// True when nothing is chosen (a pack without variants).
    public var isEmpty: Bool { textureFormat == nil && deviceTier == nil }

    /// The choice as the markers it keeps, joined by `.`: `tcf_astc.tier_2` (empty for none). A
    /// client names an installed release's folder by its index SHA-256 and this.
    public var name: String {
        [textureFormat.map { "tcf_" + $0 }, deviceTier.map { "tier_\($0)" }].compactMap { $0 }.joined(separator: ".")
    }

    /// Reads ``name``; nil when it is not one.
    public init?(name: String) {
        self.init()
        guard !name.isEmpty else { return }
        for part in name.split(separator: ".", omittingEmptySubsequences: false) {
            if part.hasPrefix("tcf_"), textureFormat == nil,
                TextureFormat.preferenceOrder.contains(String(part.dropFirst(4)))
            {
                textureFormat = String(part.dropFirst(4))
            } else if part.hasPrefix("tier_"), deviceTier == nil,
                let tier = DeviceTier.value(of: String(part.dropFirst(5)))
            {
                deviceTier = tier
            } else {
                return nil
            }
        }
    }

    /// `textureFormat=astc, deviceTier=2`, or `every device` for no choice.
    public var description: String {
        let parts = [textureFormat.map { "textureFormat=\($0)" }, deviceTier.map { "deviceTier=\($0)" }]
            .compactMap { $0 }
        return parts.isEmpty ? "every device" : parts.joined(separator: ", ")
    }

    /// Whether a file of variant `marker` (nil: shared) is installed under this choice.
    public func includes(_ marker: VariantMarker?) -> Bool {
        switch marker?.dimension {
        case nil: true
        case .textureFormat?: marker?.value == textureFormat
        case .deviceTier?: marker.flatMap { DeviceTier.value(of: $0.value) } == deviceTier
        }
    }
}
