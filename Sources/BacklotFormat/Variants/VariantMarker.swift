import BacklotBasics

/// One dimension files may vary by.
public enum VariantDimension: String, Sendable, Hashable, CaseIterable {
    case textureFormat
    case deviceTier

    /// The folder suffix that starts a marker: `#tcf_` or `#tier_` (Google Play's).
    public var suffix: String {
        switch self {
        case .textureFormat: "#tcf_"
        case .deviceTier: "#tier_"
        }
    }
}

/// A variant marker found in a path: `Textures#tcf_astc/Rock.ktx` has `textureFormat` `astc` in
/// its first component, and installs as `Textures/Rock.ktx`.
public struct VariantMarker: Sendable, Hashable {
    public let dimension: VariantDimension
    /// The value as written after the suffix: a texture format (`astc`) or a tier digit (`2`).
    public let value: String
    /// The path with the marker removed.
    public let installedPath: String

    /// The marker of `path`, nil when it has none. A marker ends a component: its name, then
    /// `#tcf_` and a format of ``TextureFormat/preferenceOrder``, or `#tier_` and a digit.
    /// - Throws: ``BacklotError/Code/invalidInput`` for a marker with an unknown value, one with no
    ///   name before it, or two markers in one path.
    public static func find(in path: String) throws -> VariantMarker? {
        // Every marker holds a '#': most paths have none, and are passed in one scan.
        guard path.utf8.contains(UInt8(ascii: "#")) else { return nil }
        var found: (dimension: VariantDimension, value: String, component: Int, base: Substring.UTF8View)?
        let components = path.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
        for (i, component) in components.enumerated() {
            for dimension in VariantDimension.allCases {
                guard let start = lastOccurrence(of: Array(dimension.suffix.utf8), in: component) else { continue }
                let base = component[..<start]
                let value = String(
                    decoding: component[component.index(start, offsetBy: dimension.suffix.utf8.count)...], as: UTF8.self
                )
                let known =
                    switch dimension {
                    case .textureFormat: TextureFormat.preferenceOrder.contains(value)
                    case .deviceTier: value.utf8.count == 1 && DeviceTier.value(of: value) != nil
                    }
                guard known else {
                    throw BacklotError(
                        .invalidInput,
                        "\"\(path)\" has the marker \"\(dimension.suffix)\(value)\", which names no \(dimension == .textureFormat ? "texture format" : "device tier (a digit)")",
                        hint: dimension == .textureFormat
                            ? "texture formats are \(TextureFormat.preferenceOrder.joined(separator: ", "))"
                            : "write the tier as a digit, as Play's #tier_0, #tier_1, #tier_2")
                }
                guard
                    VariantDimension.allCases.allSatisfy({
                        lastOccurrence(of: Array($0.suffix.utf8), in: Substring(base).utf8) == nil
                    })
                else {
                    throw BacklotError(
                        .invalidInput, "\"\(path)\" has two variant markers",
                        hint: "a file belongs to at most one variant: one texture format or one device tier")
                }
                guard !base.isEmpty else {
                    throw BacklotError(
                        .invalidInput, "\"\(path)\" has a marker with no name before it",
                        hint: "a marker ends a folder's or a file's name: Textures\(dimension.suffix)\(value)")
                }
                guard found == nil else {
                    throw BacklotError(
                        .invalidInput, "\"\(path)\" has two variant markers",
                        hint: "a file belongs to at most one variant: one texture format or one device tier")
                }
                found = (dimension, value, i, Substring(base).utf8)
            }
        }
        guard let found else { return nil }
        var installed: [UInt8] = []
        for (i, component) in components.enumerated() {
            if i > 0 { installed.append(UInt8(ascii: "/")) }
            installed += i == found.component ? Array(found.base) : Array(component)
        }
        return VariantMarker(
            dimension: found.dimension, value: found.value, installedPath: String(decoding: installed, as: UTF8.self))
    }

    /// Where the last occurrence of `needle` starts in `bytes`.
    private static func lastOccurrence(of needle: [UInt8], in bytes: Substring.UTF8View) -> Substring.UTF8View.Index? {
        guard bytes.count >= needle.count else { return nil }
        var i = bytes.index(bytes.endIndex, offsetBy: -needle.count)
        while true {
            if bytes[i...].starts(with: needle) { return i }
            if i == bytes.startIndex { return nil }
            i = bytes.index(before: i)
        }
    }
}

extension VariantMarker {
    /// Two files one device could get together that do not make a tree: both at one installed
    /// path, or the first installed as a file where the second needs a folder.
    public struct Clash: Sendable, Hashable {
        /// Indexes into the entries given to ``treeClash(_:)``.
        public let first: Int
        public let second: Int
        /// The installed path of the first file (the folder the second needs, for a folder clash).
        public let path: String
        /// True when the second needs `path` to be a folder; false when both install at `path`.
        public let needsFolder: Bool
    }

    /// The first clash among files (each its installed path and marker, nil for shared) that one
    /// device could get together, whatever it chooses; nil when every choice makes one tree. Two
    /// files meet on a device unless they are of two values of one dimension. Time and memory
    /// follow the number of files and the length of their paths, not the number of choices.
    public static func treeClash(_ entries: [(installedPath: String, marker: VariantMarker?)]) -> Clash? {
        func meet(_ a: Int, _ b: Int) -> Bool {
            guard let x = entries[a].marker, let y = entries[b].marker, x.dimension == y.dimension else { return true }
            return x.value == y.value
        }
        func path(_ i: Int) -> String.UTF8View { entries[i].installedPath.utf8 }
        // In byte order, a file that is a folder of a later path is a byte prefix of every path
        // between them: a stack of the earlier paths that are prefixes of the current one finds
        // it (as the reader's check of one tree does), with no table of every path.
        let order = entries.indices.sorted { path($0).lexicographicallyPrecedes(path($1)) }
        var prefixes: [Int] = []
        // The entries of `prefixes` by their path's length: a folder of the current path is one
        // whose length is the offset of one of its slashes (looked up per slash, not per prefix).
        var byLength: [Int: [Int]] = [:]
        var start = 0
        while start < order.count {
            var end = start + 1
            while end < order.count, path(order[end]).elementsEqual(path(order[start])) { end += 1 }
            let run = order[start..<end]
            for (n, a) in run.enumerated() {
                if let b = run.dropFirst(n + 1).first(where: { meet(a, $0) }) {
                    return Clash(first: a, second: b, path: entries[a].installedPath, needsFolder: false)
                }
            }
            let current = path(order[start])
            while let top = prefixes.last, !current.starts(with: path(top)) {
                prefixes.removeLast()
                let length = path(top).count
                byLength[length]?.removeLast()
                if byLength[length]?.isEmpty == true { byLength[length] = nil }
            }
            var offset = 0
            for byte in current {
                if byte == BytePath.separator, let folders = byLength[offset] {
                    for folder in folders {
                        if let b = run.first(where: { meet(folder, $0) }) {
                            return Clash(
                                first: folder, second: b, path: entries[folder].installedPath, needsFolder: true)
                        }
                    }
                }
                offset += 1
            }
            prefixes += run
            byLength[current.count, default: []] += run
            start = end
        }
        return nil
    }
}
