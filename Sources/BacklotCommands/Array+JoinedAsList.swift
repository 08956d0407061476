extension Array where Element == String {
    /// "a", "a or b", "a, b or c" (with `or`), "a and b" otherwise.
    func joinedAsList(or: Bool = false) -> String {
        guard count > 1 else { return first ?? "" }
        return dropLast().joined(separator: ", ") + (or ? " or " : " and ") + last!
    }
}
