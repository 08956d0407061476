import BacklotBasics
import BacklotClient

/// An extension's answer, the JSON file documented in docs/protocol.md, read and written through
/// `Codable` (``ExtensionMessageCoding``).
///
/// The protocol's defaults, defined here once and applied by ``declines(_:)``:
/// - `decline` lists the packs the extension turned down; a pack named there is declined,
///   essential or not (the extension's `shouldDownload` returned false for it);
/// - without `decline`, `download` (the packs to keep) is the decision for the packs it does not
///   name, except essential packs, which are never declined by omission;
/// - an answer with neither (`{}`) decides nothing: every pack is kept, as when the call fails.
///
/// ```swift
/// let reply = try ExtensionReply(decoding: bytes, source: "reply.json")
/// if reply.declines(pack) { … }
/// ```
public struct ExtensionReply: Sendable, Hashable {
    /// The most URL downloads one answer may ask for.
    public static let maximumDownloads = 10_000
    /// For `shouldDownload`: the IDs to download (`download`), nil when the answer has none.
    public var accepted: [String]?
    /// For `shouldDownload`: the IDs turned down (`decline`), nil when the answer has none.
    public var declined: [String]?
    /// For `downloads`: what to schedule.
    public var downloads: [URLDownload] = []
    /// For `challenge`: the extension's answer (nil: `.performDefaultHandling`, the 401 stands).
    public var challenge: ChallengeAnswer?

    public init(
        accepted: [String]? = nil, declined: [String]? = nil, downloads: [URLDownload] = [],
        challenge: ChallengeAnswer? = nil
    ) {
        self.accepted = accepted
        self.declined = declined
        self.downloads = downloads
        self.challenge = challenge
    }

    /// Whether this answer turns `pack` down (see the type's summary for the defaults).
    public func declines(_ pack: AssetPack) -> Bool {
        if let declined { return declined.contains(pack.id) }
        guard let accepted else { return false }
        if case .essential = pack.downloadPolicy { return false }
        return !accepted.contains(pack.id)
    }

    /// Reads an answer.
    /// - Throws: ``BacklotError/Code/invalidInput`` naming `source` and the key that is wrong.
    public init(decoding bytes: [UInt8], source: String) throws {
        self = try ExtensionMessageCoding.decode(ExtensionReply.self, from: bytes, source: source)
    }

    /// The answer as the file holds it.
    public func encoded() throws -> [UInt8] { try ExtensionMessageCoding.encode(self) }
}

extension ExtensionReply: Codable {
    private enum Keys: String, CodingKey { case download, decline, downloads, challenge }

    public init(from decoder: any Decoder) throws {
        let source = ExtensionMessageCoding.source(decoder)
        let c = try decoder.container(keyedBy: Keys.self)
        func ids(_ key: Keys) throws -> [String]? {
            do {
                return try c.decodeIfPresent([String].self, forKey: key)
            } catch {
                throw BacklotError(
                    .invalidInput, "the key \(key.stringValue) must be an array of pack IDs (strings)", context: source)
            }
        }
        accepted = try ids(.download)
        declined = try ids(.decline)
        downloads = try c.decodeIfPresent([URLDownload.Message].self, forKey: .downloads)?.map(\.download) ?? []
        // Each is scheduled in a transaction of its own: an answer of 300,000 (what 16 MiB holds)
        // would flood the queue of downloads.
        guard downloads.count <= Self.maximumDownloads else {
            throw BacklotError(
                .invalidInput,
                "the answer asks for \(downloads.count) downloads; at most \(Self.maximumDownloads) are scheduled from one",
                context: source, hint: "return fewer from downloads(for:), and schedule the rest later")
        }
        challenge = try c.decodeIfPresent(ChallengeAnswer.self, forKey: .challenge)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Keys.self)
        try c.encodeIfPresent(accepted, forKey: .download)
        try c.encodeIfPresent(declined, forKey: .decline)
        try c.encode(downloads.map(URLDownload.Message.init), forKey: .downloads)
        try c.encodeIfPresent(challenge, forKey: .challenge)
    }
}
