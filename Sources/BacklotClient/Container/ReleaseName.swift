import BacklotCrypto
import BacklotFormat
import BacklotProtocol

/// The name a container gives an installed release (its folder under the pack's, its row's
/// `digest`, its resumable chunks' key): the index SHA-256 in hex, then, for a pack with variants
/// (`docs/format.md` §3.2), `.` and the variant chosen (`….tcf_astc.tier_2`). One release installed
/// for another device profile is another name, so a profile change installs again, reusing every
/// chunk the two share.
enum ReleaseName {
    /// `release`'s name on a device with `profile`.
    static func of(_ release: Catalog.Release, profile: DeviceProfile) -> String {
        make(indexDigest: release.indexSHA256.hex, choice: choice(release, profile: profile))
    }

    /// What a device with `profile` installs of `release`'s variants (none for a pack without).
    static func choice(_ release: Catalog.Release, profile: DeviceProfile) -> VariantChoice {
        release.variants?.choice(for: profile) ?? VariantChoice()
    }

    static func make(indexDigest: String, choice: VariantChoice) -> String {
        choice.isEmpty ? indexDigest : indexDigest + "." + choice.name
    }

    /// Whether `name` has a release name's shape, spelt as ``make(indexDigest:choice:)`` spells it:
    /// 64 lowercase hex digits, then nothing or `.` and a variant choice. A name read back from the container's database (which the app can write)
    /// becomes a folder's name and is removed: anything else (`..`, a `/`) is refused before it
    /// is made a path.
    static func isWellFormed(_ name: String) -> Bool {
        let digest = indexDigest(name)
        guard SHA256Digest(hex: digest)?.hex == digest, let choice = choice(name) else { return false }
        return make(indexDigest: digest, choice: choice) == name  // spelt as this device spells it
    }

    /// The index SHA-256 (hex) a name starts with.
    static func indexDigest(_ name: String) -> String {
        String(name.prefix { $0 != "." })
    }

    /// The variant choice a name ends with (none when it has no `.`); nil when the ending is not one.
    static func choice(_ name: String) -> VariantChoice? {
        guard let dot = name.firstIndex(of: ".") else { return VariantChoice() }
        return VariantChoice(name: String(name[name.index(after: dot)...]))
    }
}
