import BacklotBasics
import BacklotClient
import BacklotJSON
import Foundation

/// One call from the agent to an extension, and its answer (``ExtensionReply``): JSON files,
/// documented in docs/protocol.md, read and written through `Codable` (``ExtensionMessageCoding``).
/// The agent runs `EXTENSION --backlot-extension-call CALL.json REPLY.json`; the extension reads
/// the call and writes its answer to REPLY.json (its standard output is free for logging).
///
/// ```swift
/// let bytes = try ExtensionCall.shouldDownload(packs).encoded()
/// let call = try ExtensionCall(decoding: bytes, source: "call.json")
/// ```
public enum ExtensionCall: Sendable, Hashable {
    case shouldDownload([AssetPack])
    case downloads(ContentRequest, manifestPath: String, AppExtensionInfo)
    /// A URL download's file; `outcome` is the number of its record in the container, which the
    /// extension's process claims before its handler runs (so that a crash of the agent afterwards
    /// never hands it to the app as well).
    case finished(URLDownload, filePath: String, outcome: Int64? = nil)
    /// A URL download's failure; `outcome` as for ``finished(_:filePath:outcome:)``.
    case failed(URLDownload, message: String, code: Int?, outcome: Int64? = nil)
    /// A URL download the agent runs was answered 401 with `WWW-Authenticate: Basic realm="…"`:
    /// the extension's `backgroundDownload(_:didReceive:)` answers (``ExtensionReply/challenge``).
    /// `previousFailureCount`: how many credentials the server refused before in this attempt.
    case challenge(URLDownload, realm: String, previousFailureCount: Int)
    /// An HTTPS download the agent runs: the certificates its server presented (DER, leaf first),
    /// for the extension's `backgroundDownload(_:didReceive:)` to trust (pinned for the
    /// transfer), refuse, or leave to the usual check (``ServerTrustProtectionSpace``).
    case serverTrust(URLDownload, certificates: [Data])

    public var name: String {
        switch self {
        case .shouldDownload: "shouldDownload"
        case .downloads: "downloads"
        case .finished: "finished"
        case .failed: "failed"
        case .challenge: "challenge"
        case .serverTrust: "serverTrust"
        }
    }

    /// Reads a call.
    /// - Throws: ``BacklotError/Code/invalidInput`` naming `source` and the key that is wrong.
    public init(decoding bytes: [UInt8], source: String) throws {
        self = try ExtensionMessageCoding.decode(ExtensionCall.self, from: bytes, source: source)
    }

    /// The call as the file holds it.
    public func encoded() throws -> [UInt8] { try ExtensionMessageCoding.encode(self) }

    /// The sizes a download may declare: what SQLite and `off_t` hold.
    static let fileSizeRange: ClosedRange<UInt64> = 0...UInt64(Int64.max)
}

extension ExtensionCall: Codable {
    private enum Keys: String, CodingKey {
        case call, packs, request, manifestPath, extensionInfo, download, filePath, outcome, message, code, realm
        case previousFailureCount, certificates
    }

    private struct Info: Codable {
        enum Keys: String, CodingKey { case restrictedDownloadSizeRemaining, restrictedEssentialDownloadSizeRemaining }
        let info: AppExtensionInfo

        init(_ info: AppExtensionInfo) { self.info = info }

        init(from decoder: any Decoder) throws {
            let source = ExtensionMessageCoding.source(decoder)
            let c = try decoder.container(keyedBy: Keys.self)
            info = AppExtensionInfo(
                restrictedDownloadSizeRemaining: try c.checkedInteger(
                    UInt64.self, forKey: .restrictedDownloadSizeRemaining, source: source),
                restrictedEssentialDownloadSizeRemaining: try c.checkedInteger(
                    UInt64.self, forKey: .restrictedEssentialDownloadSizeRemaining, source: source))
        }

        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: Keys.self)
            try c.encode(info.restrictedDownloadSizeRemaining, forKey: .restrictedDownloadSizeRemaining)
            try c.encode(
                info.restrictedEssentialDownloadSizeRemaining, forKey: .restrictedEssentialDownloadSizeRemaining)
        }
    }

    public init(from decoder: any Decoder) throws {
        let source = ExtensionMessageCoding.source(decoder)
        let c = try decoder.container(keyedBy: Keys.self)
        let outcome = { try c.checkedInteger(Int64.self, forKey: .outcome, in: 1...Int64.max, source: source) }
        switch try? c.decode(String.self, forKey: .call) {
        case "shouldDownload":
            self = .shouldDownload(try c.decode([AssetPack.Message].self, forKey: .packs).map(\.pack))
        case "downloads":
            let name = try c.requiredString(forKey: .request, source: source)
            guard let request = ContentRequest(name: name) else {
                throw BacklotError(
                    .invalidInput, "the key request names no content request: \(name) (install, update, periodic)",
                    context: source)
            }
            let info = try c.decodeIfPresent(Info.self, forKey: .extensionInfo)?.info ?? AppExtensionInfo()
            self = .downloads(request, manifestPath: try c.requiredString(forKey: .manifestPath, source: source), info)
        case "finished":
            self = .finished(
                try c.decode(URLDownload.Message.self, forKey: .download).download,
                filePath: try c.requiredString(forKey: .filePath, source: source), outcome: try outcome())
        case "failed":
            self = .failed(
                try c.decode(URLDownload.Message.self, forKey: .download).download,
                message: (try? c.decodeIfPresent(String.self, forKey: .message)) ?? "",
                code: try c.checkedInteger(Int.self, forKey: .code, source: source), outcome: try outcome())
        case "challenge":
            self = .challenge(
                try c.decode(URLDownload.Message.self, forKey: .download).download,
                realm: try c.requiredString(forKey: .realm, source: source),
                previousFailureCount: try c.checkedInteger(
                    Int.self, forKey: .previousFailureCount, in: 0...Int.max, source: source) ?? 0)
        case "serverTrust":
            let download = try c.decode(URLDownload.Message.self, forKey: .download).download
            guard let certificates = try? c.decode([Data].self, forKey: .certificates), certificates.count <= 16 else {
                throw BacklotError(
                    .invalidInput, "the key certificates must be an array of at most 16 certificates (base64 DER)",
                    context: source)
            }
            self = .serverTrust(download, certificates: certificates)
        default:
            throw BacklotError(
                .invalidInput,
                "the extension call names no known call (shouldDownload, downloads, finished, failed, challenge, serverTrust)",
                context: source)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Keys.self)
        try c.encode(name, forKey: .call)
        switch self {
        case .shouldDownload(let packs): try c.encode(packs.map(AssetPack.Message.init), forKey: .packs)
        case .downloads(let request, let path, let info):
            try c.encode(request.name, forKey: .request)
            try c.encode(path, forKey: .manifestPath)
            try c.encode(Info(info), forKey: .extensionInfo)
        case .finished(let d, let path, let outcome):
            try c.encode(URLDownload.Message(d), forKey: .download)
            try c.encode(path, forKey: .filePath)
            try c.encodeIfPresent(outcome, forKey: .outcome)
        case .failed(let d, let message, let code, let outcome):
            try c.encode(URLDownload.Message(d), forKey: .download)
            try c.encode(message, forKey: .message)
            try c.encode(code, forKey: .code)
            try c.encodeIfPresent(outcome, forKey: .outcome)
        case .challenge(let d, let realm, let failures):
            try c.encode(URLDownload.Message(d), forKey: .download)
            try c.encode(realm, forKey: .realm)
            try c.encode(failures, forKey: .previousFailureCount)
        case .serverTrust(let d, let certificates):
            try c.encode(URLDownload.Message(d), forKey: .download)
            try c.encode(certificates, forKey: .certificates)
        }
    }
}
