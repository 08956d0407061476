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

    /// The identifier of `available` that is `language`: the same identifier (case aside), else
    /// the same language once both are maximised (`zh-Hant` is `zh-Hant-TW`, `pt-BR` is not `pt-PT`),
    /// else the best match by ``best(among:preferred:)`` (`de` for `de-AT`, `fr-CA` for `fr`). Nil
    /// when none matches. Every place that picks the packs of a language picks them so.
    ///
    /// ```swift
    /// PreferredLanguages.match("pt-BR", among: ["pt", "pt-BR"])  // "pt-BR"
    /// PreferredLanguages.match("de-AT", among: ["de", "fr"])     // "de"
    /// ```
    public static func match(_ language: String, among available: [String]) -> String? {
        let sorted = available.sorted()
        if let same = sorted.first(where: { $0.lowercased() == language.lowercased() }) { return same }
        let maximal = Locale.Language(identifier: language).maximalIdentifier
        // Of the spellings of the same language (`pt` and `pt-BR` are both pt-Latn-BR), the most explicit.
        let same = sorted.filter { Locale.Language(identifier: $0).maximalIdentifier == maximal }
        if let explicit = same.max(by: { $0.utf8.count < $1.utf8.count }) { return explicit }
        return best(among: sorted, preferred: [language])
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
