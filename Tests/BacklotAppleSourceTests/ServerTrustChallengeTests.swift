import BacklotBasics
import BacklotClient
import BacklotCrypto
import BacklotHTTPClient
import BacklotTestSupport
import Foundation
import Synchronization
import Testing

/// Server-trust challenges (the 2022 talk: "verify the server's authenticity"): an HTTPS
/// download's delegate is shown the certificates the server presents (a real nginx with a
/// certificate of the test's own CA, which nothing else trusts) and pins, refuses or leaves them
/// to the usual check; a key it trusts is pinned for the transfer.
@Suite(.serialized) struct ServerTrustChallengeTests {
    /// Trusts the server whose leaf certificate has the SHA-256 `pinned` (as an app pins), gives
    /// the Basic credential when asked, and records what it was shown.
    final class Pinning: BADownloadManagerDelegate, @unchecked Sendable {
        let pinned: SHA256Digest?
        let fallback: URLSession.AuthChallengeDisposition
        /// Answers the server-trust challenge as HTTP authentication's, with a user and password.
        var passwordForTrust = false
        let shown = Mutex<[(method: String, chain: [Data])]>([])
        let landing: DownloadLanding

        init(pinned: SHA256Digest?, otherwise fallback: URLSession.AuthChallengeDisposition, destination: String) {
            self.pinned = pinned
            self.fallback = fallback
            landing = DownloadLanding(destination: destination)
        }

        func download(
            _ download: BADownload, didReceive challenge: URLAuthenticationChallenge,
            completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
        ) {
            let space = challenge.protectionSpace
            let chain = (space as? ServerTrustProtectionSpace)?.certificateChain ?? []
            shown.withLock { $0.append((space.authenticationMethod, chain)) }
            if space.authenticationMethod == NSURLAuthenticationMethodServerTrust, passwordForTrust {
                completionHandler(
                    .useCredential, URLCredential(user: "game", password: "secret", persistence: .forSession))
            } else if space.authenticationMethod == NSURLAuthenticationMethodServerTrust {
                let leaf = chain.first.map { SHA256.hash(Array($0)) }
                completionHandler(pinned != nil && leaf == pinned ? .useCredential : fallback, nil)
            } else {
                completionHandler(
                    .useCredential, URLCredential(user: "game", password: "secret", persistence: .forSession))
            }
        }

        func download(_ download: BADownload, finishedWithFileURL fileURL: URL) { landing.finished(fileURL) }
        func download(_ download: BADownload, failedWithError error: any Error) { landing.failed(error) }
    }

    struct Setup {
        let ca: LocalCertificateAuthority
        let issued: LocalCertificateAuthority.Issued
        let server: NginxFileServer
        var leafDigest: SHA256Digest { SHA256.hash(CertificateKey.derCertificates(inPEM: issued.certificatePEM)[0]) }

        init(basicAuth: Bool) throws {
            ca = try LocalCertificateAuthority.create(commonName: "Pinned CA")
            issued = try ca.issueServerCertificate(dnsNames: ["localhost"], ipAddresses: ["127.0.0.1"])
            server = try NginxFileServer(seed: 443, basicAuth: basicAuth, tls: issued)
        }

        func run(_ delegate: Pinning, name: String) throws {
            let manager = try BADownloadManager(containerPath: server.dir.at("device-\(name)"))
            manager.delegate = delegate
            try manager.scheduleDownload(
                BAURLDownload(
                    identifier: name, request: URLRequest(url: server.url), essential: false,
                    fileSize: server.bytes.count, applicationGroupIdentifier: "group.com.example.game",
                    priority: .default))
            #expect(delegate.landing.done.wait(timeout: .now() + 120) == .success, "the download ends")
            manager.delegate = nil
        }
    }

    /// A protection space is handed to the app's delegate and may be read from any of its threads:
    /// it is immutable once made (the proof of `ServerTrustProtectionSpace`).
    @Test func aProtectionSpaceIsReadByThreadsAtOnce() throws {
        let chain = [Data([0x30, 0x82, 1, 2]), Data([0x30, 0x82, 3])]
        let space = ServerTrustProtectionSpace(
            url: try #require(URL(string: "https://cdn.example.com:8443/v1/packs/a.pack")), certificateChain: chain)
        let wrong = Atomic<Int>(0)
        onThreadsOfTheirOwn(8) { _ in
            for _ in 0..<1_000 {
                let seen =
                    space.host == "cdn.example.com" && space.port == 8443
                    && space.authenticationMethod == NSURLAuthenticationMethodServerTrust
                    && space.certificateChain == chain
                if !seen { wrong.wrappingAdd(1, ordering: .relaxed) }
            }
        }
        #expect(wrong.load(ordering: .relaxed) == 0)
    }

    @Test func aPinnedCertificateIsTrustedThoughNoCASignedIt() throws {
        let s = try Setup(basicAuth: true)
        let d = Pinning(
            pinned: s.leafDigest, otherwise: .cancelAuthenticationChallenge, destination: s.server.dir.at("p.bin"))
        try s.run(d, name: "pinned")
        #expect(d.landing.outcome.withLock { $0 } == "finished", "\(d.landing.outcome.withLock { $0 } ?? "")")
        #expect(Array(try Data(contentsOf: URL(fileURLWithPath: s.server.dir.at("p.bin")))) == s.server.bytes)
        let shown = d.shown.withLock { $0 }
        // First the server's certificates (the leaf is the one nginx was given), then the 401.
        #expect(shown.map(\.method) == [NSURLAuthenticationMethodServerTrust, NSURLAuthenticationMethodHTTPBasic])
        #expect(
            shown.first?.chain.first.map { Array($0) }
                == CertificateKey.derCertificates(inPEM: s.issued.certificatePEM).first)
    }

    @Test func anUnpinnedCertificateIsRefusedOrLeftToTheUsualCheck() throws {
        let s = try Setup(basicAuth: false)
        let refused = Pinning(
            pinned: nil, otherwise: .cancelAuthenticationChallenge, destination: s.server.dir.at("r.bin"))
        try s.run(refused, name: "refused")
        let why = refused.landing.outcome.withLock { $0 } ?? ""
        #expect(why.contains("server-trust challenge") && why.contains("was cancelled"), "\(why)")
        // Default handling checks the certificate as usual: no CA here trusts it.
        for (fallback, name) in [
            (URLSession.AuthChallengeDisposition.performDefaultHandling, "default"), (.rejectProtectionSpace, "reject"),
        ] {
            let d = Pinning(pinned: nil, otherwise: fallback, destination: s.server.dir.at("\(name).bin"))
            try s.run(d, name: name)
            let failed = d.landing.outcome.withLock { $0 } ?? ""
            #expect(failed.hasPrefix("failed") && failed.contains("certificate"), "\(name): \(failed)")
        }
        #expect(!FileSystem.exists(s.server.dir.at("r.bin")) && !FileSystem.exists(s.server.dir.at("default.bin")))
        // A delegate that answers every challenge with its password trusts no server by it.
        let everything = Pinning(pinned: nil, otherwise: .useCredential, destination: s.server.dir.at("all.bin"))
        everything.passwordForTrust = true
        try s.run(everything, name: "everything")
        let failed = everything.landing.outcome.withLock { $0 } ?? ""
        #expect(failed.hasPrefix("failed") && failed.contains("certificate"), "\(failed)")
    }

    @Test func theTransferMeetsThePinnedKeyOrNothing() throws {
        let s = try Setup(basicAuth: false)
        let client = HTTPClient()
        let chain = try client.serverCertificates(of: s.server.url.absoluteString).flatMap(
            CertificateKey.derCertificates(inPEM:))
        let key = try CertificateKey.publicKeySHA256(ofCertificateDER: try #require(chain.first))
        let right = "sha256//" + Data(key).base64EncodedString()
        let ok = try client.download(
            s.server.url.absoluteString, to: s.server.dir.at("ok.bin"), from: 0, limit: nil, pinnedPublicKey: right)
        #expect(ok.status == 200 && ok.size == UInt64(s.server.bytes.count))
        // Another key (another server's, as a man in the middle would present): refused before any byte.
        let other = try LocalCertificateAuthority.create(commonName: "Other").issueServerCertificate(
            dnsNames: ["localhost"], ipAddresses: ["127.0.0.1"])
        let otherKey = try CertificateKey.publicKeySHA256(
            ofCertificateDER: CertificateKey.derCertificates(inPEM: other.certificatePEM)[0])
        let error = try #require(throws: BacklotError.self) {
            try client.download(
                s.server.url.absoluteString, to: s.server.dir.at("no.bin"), from: 0, limit: nil,
                pinnedPublicKey: "sha256//" + Data(otherKey).base64EncodedString())
        }
        #expect(error.code == .tls, "\(error)")
        #expect(((try? FileSystem.status(s.server.dir.at("no.bin")))??.size ?? 0) == 0)
        // What is not a certificate is refused, never a crash.
        #expect(throws: BacklotError.self) { try CertificateKey.publicKeySHA256(ofCertificateDER: [0x30, 0x03, 1, 2]) }
    }
}
