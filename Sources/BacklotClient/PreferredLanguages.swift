import Foundation

/// The device's preferred languages and how a localized pack's language is matched to them
/// (``AssetPackManager/resolvedLanguage``). On Linux they come from the environment, in
/// gettext's order: `LANGUAGE` (a colon-separated list), then `LC_ALL`, `LC_MESSAGES`, `LANG`
/// (`fr_FR.UTF-8` is `fr-FR`; `C` and `POSIX` name no language).
///
/// ```swift
/// PreferredLanguages.best(among: ["de", "fr"], preferred: ["fr-CA", "en"])  // "fr"
/// ```
public enum PreferredLanguages {
    /// The preferred languages as BCP-47 identifiers, most preferred first.
    public static func current(environment: [String: String] = ProcessInfo.processInfo.environment) -> [String] {
        var names: [String] = []
        if let list = environment["LANGUAGE"], !list.isEmpty { names += list.split(separator: ":").map(String.init) }
        for key in ["LC_ALL", "LC_MESSAGES", "LANG"] {
            if let value = environment[key], !value.isEmpty {
                names.append(value)
                break
            }
        }
        var out: [String] = []
        for name in names {
            let bare = name.prefix { $0 != "." && $0 != "@" }.replacingOccurrences(of: "_", with: "-")
            guard !bare.isEmpty, bare != "C", bare != "POSIX", !out.contains(bare) else { continue }
            out.append(bare)
        }
        return out
    }

    /// The identifier of `available` that best matches `preferred`: for each preferred language in
    /// turn, the same identifier (case aside), else one of the same language (`fr` for `fr-CA`,
    /// `fr-FR` for `fr`). Nil when none matches.
    public static func best(among available: [String], preferred: [String]) -> String? {
        func base(_ id: String) -> String { String(id.lowercased().prefix { $0 != "-" }) }
        let sorted = available.sorted()
        for wanted in preferred {
            if let same = sorted.first(where: { $0.lowercased() == wanted.lowercased() }) { return same }
            if let bare = sorted.first(where: { $0.lowercased() == base(wanted) }) { return bare }
            if let sibling = sorted.first(where: { base($0) == base(wanted) }) { return sibling }
        }
        return nil
    }
}
