import BacklotBasics
import BacklotJSON
import Foundation

/// Advanced App Clip experiences: registered URL prefixes, and Apple's rule for which one handles
/// an invocation — the most specific (longest) matching prefix.
///
/// Matching is by URL parts, not raw text: the scheme and host must be equal (case-insensitive),
/// the registered path must be a prefix of the invocation's path at a `/` boundary (so
/// `/shop` matches `/shop/42` but not `/shopping`), and every query item of the prefix must be in
/// the invocation. Among matches the longest prefix wins; equally long matches are a tie, resolved
/// by registration order and reported.
public struct AppClipExperiences: Sendable {
    /// One registered experience.
    public struct Experience: Sendable, Hashable {
        public let id: String
        public let urlPrefix: String
    }

    public let experiences: [Experience]

    public init(_ experiences: [Experience]) throws {
        for e in experiences where URLComponents(string: e.urlPrefix)?.host == nil || !e.urlPrefix.hasPrefix("https://")
        {
            throw BacklotError(.invalidInput, "\"\(e.urlPrefix)\" is not an https URL prefix", context: e.id)
        }
        self.experiences = experiences
    }

    /// Reads `{"experiences": [{"id": "…", "url": "https://…"}, …]}`.
    public init(json bytes: [UInt8], source: String) throws {
        let root = try JSONReader(source: source).read(bytes).root
        guard let list = root["experiences"]?.arrayElements else {
            throw BacklotError(
                .invalidInput, "the file needs {\"experiences\": [{\"id\": …, \"url\": …}]}", context: source)
        }
        try self.init(
            try list.enumerated().map { i, e in
                guard let url = e["url"]?.stringValue else {
                    throw BacklotError(.invalidInput, "experiences[\(i)].url is missing", context: source)
                }
                return Experience(id: e["id"]?.stringValue ?? url, urlPrefix: url)
            })
    }

    /// The result of matching: the experience, and any others of the same specificity.
    public struct Match: Sendable, Hashable {
        public let experience: Experience
        public let tiedWith: [Experience]
    }

    /// The experience that handles `url`, or nil.
    public func match(_ url: String) -> Match? {
        guard let target = URLComponents(string: url) else { return nil }
        var best: [(Experience, Int)] = []
        for e in experiences {
            guard let score = Self.specificity(of: e.urlPrefix, matching: target) else { continue }
            if let top = best.first?.1, score < top { continue }
            if let top = best.first?.1, score > top { best = [] }
            best.append((e, score))
        }
        guard let first = best.first else { return nil }
        return Match(experience: first.0, tiedWith: best.dropFirst().map(\.0))
    }

    /// How specific a matching prefix is (its path length plus its query items), or nil when it does not match.
    static func specificity(of prefix: String, matching target: URLComponents) -> Int? {
        guard let p = URLComponents(string: prefix), p.scheme?.lowercased() == target.scheme?.lowercased(),
            p.host?.lowercased() == target.host?.lowercased(), (p.port ?? 443) == (target.port ?? 443)
        else { return nil }
        let prefixPath = p.path.hasSuffix("/") ? String(p.path.dropLast()) : p.path
        let targetPath = target.path
        guard prefixPath.isEmpty || targetPath == prefixPath || targetPath.hasPrefix(prefixPath + "/") else {
            return nil
        }
        let items = p.queryItems ?? []
        let have = target.queryItems ?? []
        guard items.allSatisfy({ item in have.contains(item) }) else { return nil }
        return prefixPath.count * 16 + items.count
    }
}
