import BacklotBasics
import BacklotJSON

/// A share of devices in percent, kept in basis points (0.01 %): a rollout's step.
///
/// On the wire it is a JSON number from 0.01 to 100 (or 0, where a route allows it). The server
/// reads it from the number's exact text (``init(exactNumber:field:)``), rounded DOWN to the basis
/// point: `99.999` is 99.99 and never 100 (which would promote the candidate), and a value that is
/// not 0 is never less than 0.01.
///
/// ```swift
/// let share = try API.RolloutShare(exactNumber: "12.345", field: "rollout")   // 12.34 %
/// share.basisPoints    // 1234
/// ```
extension API {
    public struct RolloutShare: Codable, Sendable, Hashable {
        /// 0 to 10 000.
        public let basisPoints: Int

        /// `percent` rounded down to the basis point, held to 0…100 % (`percent × 100` is given a
        /// billionth more first, so that `0.29`, whose `Double` × 100 is 28.999…, is 29 basis points).
        public init(percent: Double) {
            let bp = percent.isFinite ? Int((min(max(percent, 0), 100) * 100 + 1e-9).rounded(.down)) : 0
            basisPoints = min(max(bp, 0), 10_000)
        }

        /// The share as a percentage (`12.5`).
        public var percent: Double { Double(basisPoints) / 100 }

        /// Read from a JSON number's text: 0, or from 0.01 to 100 compared as a `Double` as JSON
        /// Schema validators do, then rounded down from the exact decimal.
        /// - Throws: ``BacklotError/Code/invalidInput`` naming `field` for anything else.
        public init(exactNumber text: String, field: String) throws {
            guard let d = Double(text), d.isFinite, let decimal = JSONDecimal(text),
                d == 0 || (d >= API.Limits.lowestPercent && d <= 100)
            else {
                throw Self.outOfRange(field)
            }
            if d == 0 {
                basisPoints = 0
                return
            }
            let digits = decimal.scaled(by: 2).floorDigits(atMost: 6).flatMap { Int($0) } ?? 10_000
            basisPoints = min(max(digits, 1), 10_000)
        }

        /// The error for a share that is not a number from 0 to 100.
        public static func outOfRange(_ field: String, allowingZero: Bool = true) -> BacklotError {
            BacklotError(
                .invalidInput,
                "\"\(field)\" must be \(allowingZero ? "0, or " : "")a number from 0.01 to 100 (a rollout moves in steps of 0.01 %)",
                context: "request body",
                hint: "give a percentage such as 25 or 12.5; more than two decimals are rounded down to 0.01 %")
        }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.singleValueContainer()
            self.init(percent: try c.decode(Double.self))
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.singleValueContainer()
            try c.encode(percent)
        }
    }
}
