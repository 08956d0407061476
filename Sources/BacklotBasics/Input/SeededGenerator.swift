import Foundation

/// A small, fast, seedable random generator (SplitMix64) so that any failure can be replayed:
/// tests print the seed they drew, and `backlot fleet` prints its own.
public struct SeededGenerator: RandomNumberGenerator, Sendable {
    private var state: UInt64
    public let seed: UInt64

    /// Uses `BACKLOT_TEST_SEED` if set, else a random seed.
    public static func fromEnvironment() -> SeededGenerator {
        if let text = ProcessInfo.processInfo.environment["BACKLOT_TEST_SEED"], let seed = UInt64(text) {
            return SeededGenerator(seed: seed)
        }
        return SeededGenerator(seed: UInt64.random(in: 0...UInt64.max))
    }

    public init(seed: UInt64) {
        self.seed = seed
        state = seed
    }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// `count` pseudo-random bytes.
    public mutating func bytes(_ count: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        var i = 0
        while i < count {
            var v = next()
            for _ in 0..<8 where i < count {
                out[i] = UInt8(truncatingIfNeeded: v)
                v >>= 8
                i += 1
            }
        }
        return out
    }

    /// Compressible text: words drawn from a small vocabulary.
    public mutating func text(_ count: Int) -> [UInt8] {
        let words = [
            "asset", "pack", "texture", "level", "audio", "mesh", "shader", "the", "of", "background", "download", "\n",
        ]
        var out: [UInt8] = []
        out.reserveCapacity(count + 16)
        while out.count < count {
            out += Array(words[Int(next() % UInt64(words.count))].utf8)
            out.append(0x20)
        }
        return Array(out.prefix(count))
    }
}
