/// BCP-47 language tags as Apple's `language` key takes them: `language[-Script][-REGION]`
/// (ISO 639 language of 2–3 letters, ISO 15924 script of 4 letters, ISO 3166 region of 2 letters
/// or UN M.49 of 3 digits; no variants or extensions).
public enum LanguageTag {
    /// Whether `tag` has that form.
    public static func isValid(_ tag: String) -> Bool {
        let parts = tag.split(separator: "-", omittingEmptySubsequences: false).map(String.init)
        guard let language = parts.first, (2...3).contains(language.count), language.allSatisfy(isLetter) else {
            return false
        }
        var rest = parts.dropFirst()
        if let script = rest.first, script.count == 4, script.allSatisfy(isLetter) { rest = rest.dropFirst() }
        if let region = rest.first {
            let ok =
                (region.count == 2 && region.allSatisfy(isLetter))
                || (region.count == 3 && region.allSatisfy(\.isASCIIDigit))
            guard ok else { return false }
            rest = rest.dropFirst()
        }
        return rest.isEmpty
    }

    private static func isLetter(_ c: Character) -> Bool { c.isASCII && c.isLetter }
}

extension Character {
    var isASCIIDigit: Bool { isASCII && isNumber }
}
