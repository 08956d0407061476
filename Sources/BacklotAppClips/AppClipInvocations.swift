/// How people launch an App Clip, as far as its size limit is concerned.
///
/// Apple splits invocations in two. *Digital* ones happen on the device: a website's Smart App
/// Banner or App Clip link, Messages, Spotlight, Maps, another app opening the link. *Physical*
/// ones start in the world: App Clip Codes, QR codes and NFC tags. A clip that someone may launch
/// on the go, from a physical code, must stay small enough to download quickly over a cellular
/// network, so physical invocations keep the lower limit (see ``AppClipSizeRule``).
///
/// ```swift
/// let invocations = AppClipInvocations(rawValue: "digital")   // .digital
/// invocations?.includesPhysical                                // false
/// ```
public enum AppClipInvocations: String, Sendable, Hashable, CaseIterable {
    /// Only on-device invocations: websites, Messages, Spotlight, Maps, other apps.
    case digital
    /// Only App Clip Codes, QR codes and NFC tags.
    case physical
    /// Both kinds (what an App Clip with advanced experiences and printed codes usually has).
    case both

    /// Whether an App Clip Code, a QR code or an NFC tag can launch the clip.
    public var includesPhysical: Bool { self != .digital }
}
