import BacklotBasics
import BacklotCrypto
import Foundation
import Synchronization

/// HTTP authentication for URL downloads (Apple's `download(_:didReceive:completionHandler:)`): a
/// server that answers 401 with `WWW-Authenticate: Basic realm="…"` is answered by the app.
extension DownloadManager {
    /// Answers an authentication challenge for a download: a disposition and, for
    /// `.useCredential`, the credential (a user and a password, for Basic authentication).
    public typealias ChallengeResponder =
        @Sendable (URLDownload, URLAuthenticationChallenge) -> (URLSession.AuthChallengeDisposition, URLCredential?)

    /// The most challenges one attempt answers (a credential the server refuses again is asked for again).
    static let maximumChallenges = 3

    /// Sets who answers HTTP authentication challenges of this manager's downloads (nil: nobody,
    /// and a 401 fails the download as any other error status does). `BADownloadManager` sets its
    /// delegate's `download(_:didReceive:completionHandler:)` here.
    ///
    /// ```swift
    /// manager.setChallengeResponder { download, challenge in
    ///     (.useCredential, URLCredential(user: "game", password: secret, persistence: .forSession))
    /// }
    /// ```
    public func setChallengeResponder(_ responder: ChallengeResponder?) {
        challengeResponder.withLock { $0 = responder }
    }

    /// The headers to send again after a 401, or nil to let it fail.
    /// - Throws: ``BacklotError/Code/cancelled`` when the app cancels the challenge.
    func answerChallenge(
        _ d: URLDownload, headers: [String: String], previousFailures: Int
    ) throws -> [String: String]? {
        guard previousFailures < Self.maximumChallenges, let responder = challengeResponder.withLock({ $0 }),
            let header = headers["www-authenticate"], let realm = Self.basicRealm(header)
        else { return nil }
        let challenge = Self.basicChallenge(for: d, realm: realm, previousFailures: previousFailures, headers: headers)
        let (disposition, credential) = responder(d, challenge)
        switch disposition {
        case .useCredential:
            guard let user = credential?.user, let password = credential?.password else { return nil }
            return ["Authorization": "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()]
        case .cancelAuthenticationChallenge:
            throw BacklotError(
                .cancelled,
                "the authentication challenge of \(d.url) was cancelled (by the app's delegate, or by the extension for a download the agent runs)",
                context: d.identifier)
        default:
            // Default handling (no stored credential here) and a rejected protection space: the 401 stands.
            return nil
        }
    }

    /// The challenge of a 401 with `WWW-Authenticate: Basic realm="REALM"` for a download, as
    /// Apple's frameworks pass it: the protection space of the download's host, port and scheme,
    /// Basic authentication, how many credentials were refused before, and the 401 response.
    ///
    /// ```swift
    /// let challenge = DownloadManager.basicChallenge(for: download, realm: "Levels", previousFailures: 0)
    /// let (disposition, credential) = await ext.backgroundDownload(download, didReceive: challenge)
    /// ```
    public static func basicChallenge(
        for d: URLDownload, realm: String, previousFailures: Int, headers: [String: String] = [:]
    ) -> URLAuthenticationChallenge {
        let https = d.url.scheme?.lowercased() == "https"
        let space = URLProtectionSpace(
            host: d.url.host ?? "", port: d.url.port ?? (https ? 443 : 80), protocol: d.url.scheme, realm: realm,
            authenticationMethod: NSURLAuthenticationMethodHTTPBasic)
        let response = HTTPURLResponse(url: d.url, statusCode: 401, httpVersion: "HTTP/1.1", headerFields: headers)
        return URLAuthenticationChallenge(
            protectionSpace: space, proposedCredential: nil, previousFailureCount: previousFailures,
            failureResponse: response, error: nil, sender: ChallengeSender())
    }

    /// A server-trust challenge for an HTTPS download (``ServerTrustProtectionSpace``).
    public static func serverTrustChallenge(for d: URLDownload, certificates: [Data]) -> URLAuthenticationChallenge {
        URLAuthenticationChallenge(
            protectionSpace: ServerTrustProtectionSpace(url: d.url, certificateChain: certificates),
            proposedCredential: nil, previousFailureCount: 0, failureResponse: nil, error: nil,
            sender: ChallengeSender())
    }

    /// Before an HTTPS download's first transfer, when someone answers challenges: the server's
    /// certificates are read (a connection that sends nothing) and put to the responder. Returns
    /// the public key to pin when it trusts them (`.useCredential` with no user: Linux has no
    /// `URLCredential(trust:)`), nil to check the certificate as usual (default handling, a
    /// rejected protection space, a credential with a user and password, or a server that
    /// presented none).
    /// - Throws: ``BacklotError/Code/cancelled`` when the challenge is cancelled.
    func answerServerTrust(_ d: URLDownload) throws -> String? {
        guard d.url.scheme?.lowercased() == "https", let responder = challengeResponder.withLock({ $0 }) else {
            return nil
        }
        let pem = (try? http.serverCertificates(of: d.url.absoluteString)) ?? []
        let chain = pem.flatMap(CertificateKey.derCertificates(inPEM:))
        guard let leaf = chain.first else { return nil }  // unreachable now: the transfer says why
        let (disposition, credential) = responder(
            d, Self.serverTrustChallenge(for: d, certificates: chain.map { Data($0) }))
        switch disposition {
        case .useCredential where credential?.user == nil:
            // Trusting the server is `.useCredential` without a user (Apple's is a credential of the
            // trust itself); one with a user and a password answers HTTP authentication, and given
            // here (a responder that answers every challenge alike) it trusts nothing: the
            // certificate is checked as usual.
            return "sha256//" + Data(try CertificateKey.publicKeySHA256(ofCertificateDER: leaf)).base64EncodedString()
        case .cancelAuthenticationChallenge:
            throw BacklotError(
                .cancelled,
                "the server-trust challenge of \(d.url) was cancelled (by the app's delegate, or by the extension for a download the agent runs)",
                context: d.identifier)
        default:
            return nil
        }
    }

    /// The realm of a `Basic` challenge (`Basic realm="Levels"`), or nil for another scheme.
    static func basicRealm(_ header: String) -> String? {
        let trimmed = header.trimmingCharacters(in: .whitespaces)
        guard trimmed.lowercased().hasPrefix("basic") else { return nil }
        guard let r = trimmed.range(of: "realm=", options: .caseInsensitive) else { return "" }
        var value = trimmed[r.upperBound...]
        if value.hasPrefix("\"") {
            value = value.dropFirst()
            return String(value.prefix { $0 != "\"" })
        }
        return String(value.prefix { $0 != "," && $0 != " " })
    }
}

/// The challenge's sender: the answer is the responder's return value, so its calls do nothing.
final class ChallengeSender: NSObject, URLAuthenticationChallengeSender {
    func use(_ credential: URLCredential, for challenge: URLAuthenticationChallenge) {}
    func continueWithoutCredential(for challenge: URLAuthenticationChallenge) {}
    func cancel(_ challenge: URLAuthenticationChallenge) {}
    func performDefaultHandling(for challenge: URLAuthenticationChallenge) {}
    func rejectProtectionSpaceAndContinue(with challenge: URLAuthenticationChallenge) {}
}
