import BacklotBasics

/// The rules for paths in file selectors (and pack paths in general).
///
/// Selector paths are relative to the source root and use `/`. A leading `./` and a trailing `/`
/// are removed; `.` alone means the root (for directories only); `..`, absolute paths, `\` and
/// empty components are refused.
public enum SelectorPath {
    /// A broken rule: its stable name, what is wrong, and the fix.
    public struct Problem: Error, Sendable, Hashable {
        public let rule: String
        public let message: String
        public let fix: String?
    }

    /// The normalised path ("" for the root), or the rule it breaks.
    public static func normalize(_ text: String, allowRoot: Bool, isPattern: Bool = false) -> Result<String, Problem> {
        if text.isEmpty {
            return .failure(
                Problem(
                    rule: "path.empty", message: "the path is empty",
                    fix: allowRoot ? "write \".\" for the whole source root" : "name a file"))
        }
        let bytes = text.utf8
        if bytes.first == UInt8(ascii: "[") && bytes.last == UInt8(ascii: "]") && bytes.contains(UInt8(ascii: " ")) {
            return .failure(
                Problem(
                    rule: "path.placeholder", message: "\"\(text)\" is still the template's placeholder",
                    fix: "replace it with a path relative to the source root"))
        }
        if bytes.contains(UInt8(ascii: "\\")) && !isPattern {
            return .failure(
                Problem(
                    rule: "path.backslash", message: "\"\(text)\" contains '\\'",
                    fix: "separate folders with '/' (\"\(text.replacingOccurrences(of: "\\", with: "/"))\")"))
        }
        if bytes.first == BytePath.separator {
            return .failure(
                Problem(
                    rule: "path.absolute",
                    message: "\"\(text)\" is an absolute path; selector paths are relative to the source root",
                    fix: "set \"sourceRoot\" (or --source-root) to the folder and make the path relative to it"))
        }
        if bytes.contains(0) {
            return .failure(Problem(rule: "path.nul", message: "the path contains a NUL character", fix: nil))
        }
        // Components are split on the byte '/' and compared as bytes (BytePath): a '/' or '..'
        // followed by a combining mark is still a separator or a parent reference to the kernel.
        var components = BytePath.components(text)
        while components.count > 1, let first = components.first, BytePath.isDot(first) { components.removeFirst() }
        while components.count > 1, components.last?.isEmpty == true { components.removeLast() }
        if components.count == 1, BytePath.isDot(components[0]) {
            guard allowRoot else {
                return .failure(
                    Problem(
                        rule: "path.root", message: "\".\" names the source root, not a file",
                        fix: "use {\"directory\": \".\"} to take everything"))
            }
            return .success("")
        }
        for c in components {
            if BytePath.isDotDot(c) {
                return .failure(
                    Problem(
                        rule: "path.parent",
                        message: "\"\(text)\" contains '..'; selectors may not leave the source root",
                        fix: "point \"sourceRoot\" (or --source-root) at a folder that contains everything instead"))
            }
            if c.isEmpty || BytePath.isDot(c) {
                return .failure(
                    Problem(
                        rule: "path.component", message: "\"\(text)\" has an empty or '.' component",
                        fix: "remove the extra '/' or '.'"))
            }
            if c.utf8.count > 255 {
                return .failure(
                    Problem(rule: "path.long", message: "a component of \"\(text)\" is longer than 255 bytes", fix: nil)
                )
            }
        }
        if components.count > maximumDepth {
            return .failure(
                Problem(
                    rule: "path.deep", message: "\"\(text)\" is more than \(maximumDepth) names deep",
                    fix: "move the file nearer the source root"))
        }
        let joined = components.joined(separator: "/")
        if joined.utf8.count > 4096 {
            return .failure(Problem(rule: "path.long", message: "the path is longer than 4096 bytes", fix: nil))
        }
        return .success(joined)
    }

    /// Whether the bytes are a file path that ``isNormal(_:)`` accepts, checked in one pass
    /// without building a string: 1…4096 bytes, no NUL or `\\`, not a template placeholder, and
    /// at most ``maximumDepth`` components split on `/` that are 1…255 bytes and neither `.` nor
    /// `..`. A false answer says nothing about why: ask ``normalize(_:allowRoot:isPattern:)`` for
    /// the rule.
    ///
    /// ```swift
    /// SelectorPath.isNormalFilePath(Array("Levels/1.json".utf8))   // true
    /// SelectorPath.isNormalFilePath(Array("./Levels/1.json".utf8)) // false
    /// ```
    public static func isNormalFilePath(_ bytes: some Collection<UInt8>) -> Bool {
        bytes.withContiguousStorageIfAvailable { isNormalFilePath(UnsafeRawBufferPointer($0)) }
            ?? isNormalFilePath(Array(bytes))
    }

    /// The most names a path has (its folders and its file): a device walks an installed
    /// release's folders one open descriptor per level (``DirectoryHandle/removalDepth``).
    public static let maximumDepth = 256

    static func isNormalFilePath(_ b: UnsafeRawBufferPointer) -> Bool {
        let n = b.count
        guard n >= 1, n <= 4096 else { return false }
        var names = 0
        if b[0] == UInt8(ascii: "["), b[n - 1] == UInt8(ascii: "]"), b.contains(UInt8(ascii: " ")) { return false }
        var start = 0
        for i in 0...n {
            let c: UInt8 = i == n ? BytePath.separator : b[i]
            if c == 0 || c == UInt8(ascii: "\\") { return false }
            guard c == BytePath.separator else { continue }
            let length = i - start
            if length == 0 || length > 255 { return false }
            names += 1
            if names > maximumDepth { return false }
            if b[start] == UInt8(ascii: "."), length == 1 || (length == 2 && b[start + 1] == UInt8(ascii: ".")) {
                return false
            }
            start = i + 1
        }
        return true
    }

    /// Whether `path` is a file path already in normal form, byte for byte (pack paths are byte strings).
    public static func isNormal(_ path: String) -> Bool {
        guard case .success(let normal) = normalize(path, allowRoot: false) else { return false }
        return BytePath.same(normal, path)
    }
}
