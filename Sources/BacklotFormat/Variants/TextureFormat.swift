/// GPU texture compression formats, by Google Play's names (and `bc7`, `uncompressed`).
public enum TextureFormat {
    /// Every format Backlot knows, best first: a device gets the first of a pack's formats it
    /// reads (ASTC before the BCn formats before ETC2, as image quality per byte goes).
    public static let preferenceOrder = [
        "astc", "bc7", "dxt1", "etc2", "etc1", "pvrtc", "atc", "3dc", "latc", "paletted", "uncompressed",
    ]
    /// What every device reads.
    public static let uncompressed = "uncompressed"
}
