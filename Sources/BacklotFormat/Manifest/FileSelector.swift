/// One entry of a manifest's `fileSelectors`: what to take from the source root, and where it goes in the pack.
public enum FileSelector: Sendable, Hashable {
    /// `{"file": P}`: one file, at the same path in the pack.
    case file(String)
    /// `{"directory": P}`: every file under a directory, recursively, keeping the prefix (`"."` is the whole root).
    case directory(String)
    /// `{"filePattern": G}`: files whose source path matches a glob (`*`, `?`, `[…]`, `**`).
    case filePattern(String)
    /// `{"fileExclusion": G}`: removes files whose source path matches the glob from what other selectors chose.
    case fileExclusion(String)
    /// `{"fileSource": S, "fileDestination": D}`: one file, stored at another path.
    case fileMapping(source: String, destination: String)
    /// `{"directorySource": S, "directoryDestination": D}`: a directory's files, re-rooted at another path.
    case directoryMapping(source: String, destination: String)

    /// The selector's keys, for messages.
    public var keys: String {
        switch self {
        case .file: "file"
        case .directory: "directory"
        case .filePattern: "filePattern"
        case .fileExclusion: "fileExclusion"
        case .fileMapping: "fileSource + fileDestination"
        case .directoryMapping: "directorySource + directoryDestination"
        }
    }
}
