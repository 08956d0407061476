import BacklotCrypto

/// The staged-rollout rule (`docs/protocol.md` §4): which devices take a candidate release.
public enum RolloutBucket {
    /// `SHA-256(deviceID ‖ 0x00 ‖ packID ‖ 0x00 ‖ version) mod 10000`, the digest read as one
    /// big-endian 256-bit integer.
    public static func bucket(deviceID: String, packID: String, version: Int) -> Int {
        let bytes = Array(deviceID.utf8) + [0] + Array(packID.utf8) + [0] + Array(String(version).utf8)
        var remainder = 0
        for b in SHA256.hash(bytes).bytes { remainder = (remainder * 256 + Int(b)) % 10_000 }
        return remainder
    }

    /// Whether the device takes a candidate rolled out to `basisPoints` (0…10000) of devices.
    public static func takesCandidate(deviceID: String, packID: String, version: Int, basisPoints: Int) -> Bool {
        bucket(deviceID: deviceID, packID: packID, version: version) < basisPoints
    }
}
