import BacklotBasics
import BacklotClient
import BacklotFormat
import BacklotJSON
import Foundation

/// One call from the agent to an extension, and its answer: JSON files, documented in
/// docs/protocol.md. The agent runs `EXTENSION --backlot-extension-call CALL.json REPLY.json`;
/// the extension reads the call and writes its answer to REPLY.json (its standard output is
/// free for logging).
public enum ExtensionCall: Sendable, Hashable {
    case shouldDownload([AssetPack])
    case downloads(ContentRequest, manifestPath: String, AppExtensionInfo)
    /// A URL download's file; `outcome` is the number of its record in the container, which the
    /// extension's process claims before its handler runs (so that a crash of the agent afterwards
    /// never hands it to the app as well).
    case finished(URLDownload, filePath: String, outcome: Int64? = nil)
    /// A URL download's failure; `outcome` as for ``finished(_:filePath:outcome:)``.
    case failed(URLDownload, message: String, code: Int?, outcome: Int64? = nil)

    public var name: String {
        switch self {
        case .shouldDownload: "shouldDownload"
        case .downloads: "downloads"
        case .finished: "finished"
        case .failed: "failed"
        }
    }

    public var json: JSONNode {
        var m: [(String, JSONNode)] = [("call", .string(name))]
        switch self {
        case .shouldDownload(let packs): m.append(("packs", .array(packs.map(Self.packJSON))))
        case .downloads(let r, let path, let info):
            m.append(("request", .string(r.name)))
            m.append(("manifestPath", .string(path)))
            m.append(
                (
                    "extensionInfo",
                    .object([
                        "restrictedDownloadSizeRemaining": info.restrictedDownloadSizeRemaining.map { .number($0) }
                            ?? .null,
                        "restrictedEssentialDownloadSizeRemaining": info.restrictedEssentialDownloadSizeRemaining.map {
                            .number($0)
                        } ?? .null,
                    ])
                ))
        case .finished(let d, let path, let outcome):
            m.append(("download", Self.downloadJSON(d)))
            m.append(("filePath", .string(path)))
            if let outcome { m.append(("outcome", .number(outcome))) }
        case .failed(let d, let message, let code, let outcome):
            m.append(("download", Self.downloadJSON(d)))
            m.append(("message", .string(message)))
            m.append(("code", code.map { .number($0) } ?? .null))
            if let outcome { m.append(("outcome", .number(outcome))) }
        }
        return JSONNode(.object(m.map { JSONMember(key: $0.0, value: $0.1) }))
    }

    public init(json node: JSONNode, source: String) throws {
        func bad(_ what: String) -> BacklotError {
            BacklotError(.invalidInput, "the extension call \(what)", context: source)
        }
        switch node["call"]?.stringValue {
        case "shouldDownload":
            guard let packs = node["packs"]?.arrayElements else { throw bad("has no packs") }
            self = .shouldDownload(try packs.map { try Self.pack($0, source: source) })
        case "downloads":
            guard let r = node["request"]?.stringValue.flatMap(ContentRequest.init(name:)),
                let path = node["manifestPath"]?.stringValue
            else {
                throw bad("has no valid request or manifestPath")
            }
            let info = node["extensionInfo"]
            self = .downloads(
                r, manifestPath: path,
                AppExtensionInfo(
                    restrictedDownloadSizeRemaining: try Self.number(
                        info?["restrictedDownloadSizeRemaining"], as: UInt64.self,
                        "extensionInfo.restrictedDownloadSizeRemaining", source: source),
                    restrictedEssentialDownloadSizeRemaining: try Self.number(
                        info?["restrictedEssentialDownloadSizeRemaining"], as: UInt64.self,
                        "extensionInfo.restrictedEssentialDownloadSizeRemaining", source: source)))
        case "finished":
            guard let d = node["download"], let path = node["filePath"]?.stringValue else {
                throw bad("has no download or filePath")
            }
            self = .finished(
                try Self.download(d, source: source), filePath: path,
                outcome: try Self.number(node["outcome"], as: Int64.self, "outcome", in: 1...Int64.max, source: source))
        case "failed":
            guard let d = node["download"] else { throw bad("has no download") }
            self = .failed(
                try Self.download(d, source: source), message: node["message"]?.stringValue ?? "",
                code: try Self.number(node["code"], as: Int.self, "code", source: source),
                outcome: try Self.number(node["outcome"], as: Int64.self, "outcome", in: 1...Int64.max, source: source))
        default:
            throw bad("names no known call (shouldDownload, downloads, finished, failed)")
        }
    }

    /// A whole number of a call or an answer, through ``CheckedInteger`` (never a trap): nil when
    /// the key is absent or null.
    /// - Throws: ``BacklotError/Code/invalidInput`` naming the key when it holds anything but a
    ///   decimal whole number in `range` (a string, `-1` for a size, `1.5`, `1e3`, `2^64`, `1e400`).
    static func number<T: FixedWidthInteger>(
        _ n: JSONNode?, as type: T.Type, _ key: String, in range: ClosedRange<T>? = nil,
        source: String
    ) throws -> T? {
        guard let n, n.kind != .null else { return nil }
        let bounds = range ?? T.min...T.max
        guard case .number(let text) = n.kind else {
            throw BacklotError(
                .invalidInput,
                "the key \(key) is \(n.typeName), not a whole number in \(bounds.lowerBound)…\(bounds.upperBound)",
                context: n.position.line > 0 ? "\(source):\(n.position)" : source)
        }
        return try CheckedInteger.parse(
            text, as: T.self, "the key \(key)", in: bounds,
            context: n.position.line > 0 ? "\(source):\(n.position)" : source)
    }

    /// The sizes a download may declare: what SQLite and `off_t` hold.
    static let fileSizeRange: ClosedRange<UInt64> = 0...UInt64(Int64.max)

    public static func packJSON(_ p: AssetPack) -> JSONNode {
        .object([
            "id": .string(p.id), "downloadSize": .number(p.downloadSize), "version": .number(p.version),
            "digest": .string(p.digest),
            "downloadPolicy": p.downloadPolicy.json, "userInfo": p.userInfo ?? .null,
            "language": p.language.map { .string($0) } ?? .null,
        ])
    }

    static func pack(_ n: JSONNode, source: String) throws -> AssetPack {
        let size = try number(n["downloadSize"], as: Int.self, "packs[].downloadSize", in: 0...Int.max, source: source)
        let version = try number(n["version"], as: Int.self, "packs[].version", in: 0...Int.max, source: source)
        guard let id = n["id"]?.stringValue, let size, let version,
            let digest = n["digest"]?.stringValue, let policy = n["downloadPolicy"].flatMap(DownloadPolicy.init(json:))
        else {
            throw BacklotError(.invalidInput, "a pack in the extension call is incomplete", context: source)
        }
        let userInfo = n["userInfo"].flatMap { $0.kind == .null ? nil : $0 }
        return AssetPack(
            id: id, downloadSize: size, version: version, userInfo: userInfo, language: n["language"]?.stringValue,
            downloadPolicy: policy, digest: digest)
    }

    public static func downloadJSON(_ d: URLDownload) -> JSONNode {
        .object([
            "identifier": .string(d.identifier), "url": .string(d.url.absoluteString),
            "fileSize": d.fileSize.map { .number($0) } ?? .null,
            "essential": .bool(d.isEssential), "priority": .number(d.priority),
        ])
    }

    public static func download(_ n: JSONNode, source: String) throws -> URLDownload {
        guard let id = n["identifier"]?.stringValue, !id.isEmpty,
            let url = n["url"]?.stringValue.flatMap(URL.init(string:))
        else {
            throw BacklotError(.invalidInput, "a download needs an identifier and a URL", context: source)
        }
        var essential = false
        if case .bool(let b)? = n["essential"]?.kind { essential = b }
        let priority = try number(n["priority"], as: Int.self, "downloads[\"\(id)\"].priority", source: source) ?? 0
        let fileSize = try number(
            n["fileSize"], as: UInt64.self, "downloads[\"\(id)\"].fileSize", in: fileSizeRange, source: source)
        return URLDownload(identifier: id, url: url, fileSize: fileSize, isEssential: essential, priority: priority)
    }
}

/// An extension's answer.
///
/// The protocol's defaults, defined here once and applied by ``declines(_:)``:
/// - `decline` lists the packs the extension turned down; a pack named there is declined,
///   essential or not (the extension's `shouldDownload` returned false for it);
/// - without `decline`, `download` (the packs to keep) is the decision for the packs it does not
///   name, except essential packs, which are never declined by omission;
/// - an answer with neither (`{}`) decides nothing: every pack is kept, as when the call fails.
public struct ExtensionReply: Sendable, Hashable {
    /// For `shouldDownload`: the IDs to download (`download`), nil when the answer has none.
    public var accepted: [String]?
    /// For `shouldDownload`: the IDs turned down (`decline`), nil when the answer has none.
    public var declined: [String]?
    /// For `downloads`: what to schedule.
    public var downloads: [URLDownload] = []

    public init(accepted: [String]? = nil, declined: [String]? = nil, downloads: [URLDownload] = []) {
        self.accepted = accepted
        self.declined = declined
        self.downloads = downloads
    }

    /// Whether this answer turns `pack` down (see the type's summary for the defaults).
    public func declines(_ pack: AssetPack) -> Bool {
        if let declined { return declined.contains(pack.id) }
        guard let accepted else { return false }
        if case .essential = pack.downloadPolicy { return false }
        return !accepted.contains(pack.id)
    }

    public var json: JSONNode {
        var m: [(String, JSONNode)] = []
        if let accepted { m.append(("download", .array(accepted.map { .string($0) }))) }
        if let declined { m.append(("decline", .array(declined.map { .string($0) }))) }
        m.append(("downloads", .array(downloads.map(ExtensionCall.downloadJSON))))
        return JSONNode(.object(m.map { JSONMember(key: $0.0, value: $0.1) }))
    }

    public init(json node: JSONNode, source: String) throws {
        func ids(_ key: String) throws -> [String]? {
            guard let n = node[key], n.kind != .null else { return nil }
            guard let elements = n.arrayElements else {
                throw BacklotError(
                    .invalidInput, "the key \(key) is \(n.typeName), not an array of pack IDs", context: source)
            }
            return try elements.map { e in
                guard let id = e.stringValue else {
                    throw BacklotError(
                        .invalidInput, "the key \(key) holds \(e.typeName), not a pack ID", context: source)
                }
                return id
            }
        }
        accepted = try ids("download")
        declined = try ids("decline")
        downloads = try (node["downloads"]?.arrayElements ?? []).map { try ExtensionCall.download($0, source: source) }
    }
}
