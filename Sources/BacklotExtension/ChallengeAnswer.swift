import BacklotBasics
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// An extension's answer to an authentication challenge (``ExtensionCall/challenge(_:realm:previousFailureCount:)``):
/// Apple's disposition, and for `.useCredential` a user and a password (Basic authentication).
/// In an answer: `{"challenge": {"disposition": "useCredential", "user": "…", "password": "…"}}`.
public struct ChallengeAnswer: Sendable, Hashable {
    public var disposition: URLSession.AuthChallengeDisposition
    public var user: String?
    public var password: String?

    public init(disposition: URLSession.AuthChallengeDisposition, user: String? = nil, password: String? = nil) {
        self.disposition = disposition
        self.user = user
        self.password = password
    }

    /// What the extension's `backgroundDownload(_:didReceive:)` returned.
    public init(_ answer: (URLSession.AuthChallengeDisposition, URLCredential?)) {
        self.init(disposition: answer.0, user: answer.1?.user, password: answer.1?.password)
    }

    /// As the download manager's challenge responder returns it.
    public var response: (URLSession.AuthChallengeDisposition, URLCredential?) {
        guard disposition == .useCredential, let user, let password else { return (disposition, nil) }
        return (disposition, URLCredential(user: user, password: password, persistence: .forSession))
    }

    /// The disposition's name in the protocol (`useCredential`, …).
    public var dispositionName: String { Self.names.first { $0.0 == disposition }?.1 ?? "performDefaultHandling" }

    /// The dispositions by their names in the protocol.
    static let names: [(URLSession.AuthChallengeDisposition, String)] = [
        (.useCredential, "useCredential"), (.performDefaultHandling, "performDefaultHandling"),
        (.cancelAuthenticationChallenge, "cancelAuthenticationChallenge"),
        (.rejectProtectionSpace, "rejectProtectionSpace"),
    ]
}

extension ChallengeAnswer: Codable {
    private enum Keys: String, CodingKey { case disposition, user, password }

    public init(from decoder: any Decoder) throws {
        let source = ExtensionMessageCoding.source(decoder)
        let c = try decoder.container(keyedBy: Keys.self)
        let name = try c.requiredString(forKey: .disposition, source: source)
        guard let disposition = Self.names.first(where: { $0.1 == name })?.0 else {
            throw BacklotError(
                .invalidInput,
                "the key challenge.disposition names no disposition: \(name) (\(Self.names.map(\.1).joined(separator: ", ")))",
                context: source)
        }
        self.init(
            disposition: disposition, user: try c.decodeIfPresent(String.self, forKey: .user),
            password: try c.decodeIfPresent(String.self, forKey: .password))
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Keys.self)
        try c.encode(dispositionName, forKey: .disposition)
        try c.encodeIfPresent(user, forKey: .user)
        try c.encodeIfPresent(password, forKey: .password)
    }
}
