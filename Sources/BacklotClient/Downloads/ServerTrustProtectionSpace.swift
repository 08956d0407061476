import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The protection space of a server-trust challenge (`NSURLAuthenticationMethodServerTrust`) for
/// an HTTPS download. Apple's carries a `SecTrust` (`serverTrust`), which Linux has not: this one
/// carries the certificates the server presented, DER, leaf first, for an app to pin or refuse.
///
/// ```swift
/// func download(_ download: BADownload, didReceive challenge: URLAuthenticationChallenge,
///               completionHandler: @escaping (URLSession.AuthChallengeDisposition, URLCredential?) -> Void) {
///     guard let space = challenge.protectionSpace as? ServerTrustProtectionSpace else {
///         return completionHandler(.performDefaultHandling, nil)
///     }
///     let pinned = space.certificateChain.first.map { SHA256.hash(Array($0)) } == expectedLeafDigest
///     completionHandler(pinned ? .useCredential : .cancelAuthenticationChallenge, nil)
/// }
/// ```
///
/// `.useCredential` with no credential (Linux has no `URLCredential(trust:)`) trusts the server's
/// key for this download, whoever signed its certificate: the transfer is then made with that key
/// pinned. `.useCredential` with a user and a password (HTTP authentication's answer, given by a
/// delegate that answers every challenge alike) trusts nothing. `.performDefaultHandling` and
/// `.rejectProtectionSpace` check the certificate as usual (the CA file, or the system's CAs);
/// `.cancelAuthenticationChallenge` fails the download.
// Safe because: immutable after init (its one field is `let`, and `URLProtectionSpace`'s are set once by
// `super.init`); Swift cannot check a subclass of a non-Sendable Foundation class.
// Tested: `ServerTrustChallengeTests.aProtectionSpaceIsReadByThreadsAtOnce`.
public final class ServerTrustProtectionSpace: URLProtectionSpace, @unchecked Sendable {  // immutable after init
    /// The certificates the server presented, DER, leaf first.
    public let certificateChain: [Data]

    public init(url: URL, certificateChain: [Data]) {
        self.certificateChain = certificateChain
        super.init(
            host: url.host ?? "", port: url.port ?? 443, protocol: url.scheme, realm: nil,
            authenticationMethod: NSURLAuthenticationMethodServerTrust)
    }

    public required init?(coder: NSCoder) { nil }
}
