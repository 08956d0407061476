/// Device tiers, as Google Play's `#tier_N` folders number them: 0 (the least capable) to 9;
/// `low`, `medium` and `high` are 0, 1 and 2.
public enum DeviceTier {
    public static let range = 0...9
    public static let names = ["low": 0, "medium": 1, "high": 2]

    /// The tier `text` names (`2`, `high`), nil when it names none.
    public static func value(of text: String) -> Int? {
        if let named = names[text] { return named }
        guard text.utf8.count == 1, let digit = Int(text), range.contains(digit) else { return nil }
        return digit
    }
}
