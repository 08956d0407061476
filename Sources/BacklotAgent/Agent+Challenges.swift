import BacklotBasics
import BacklotClient
import BacklotExtension
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Authentication challenges of the URL downloads the agent runs — HTTP Basic authentication, and
/// the server's certificates of an HTTPS download: the app is not there to answer, so the
/// extension is woken for its `backgroundDownload(_:didReceive:)` (Apple's routing).
extension Agent {
    /// Puts each challenge to the extension (an extension call under its time limit and budget);
    /// when the call cannot be made or fails, the answer is `.performDefaultHandling` and the 401
    /// stands. The credential is never logged.
    static func challengeResponder(
        runner: ExtensionRunner, log: @escaping @Sendable (String) -> Void
    ) -> DownloadManager.ChallengeResponder {
        { download, challenge in
            let call =
                if let space = challenge.protectionSpace as? ServerTrustProtectionSpace {
                    ExtensionCall.serverTrust(download, certificates: space.certificateChain)
                } else {
                    ExtensionCall.challenge(
                        download, realm: challenge.protectionSpace.realm ?? "",
                        previousFailureCount: challenge.previousFailureCount)
                }
            do {
                let answer =
                    try runner.call(call, bypassBudget: false).challenge
                    ?? ChallengeAnswer(disposition: .performDefaultHandling)
                log(
                    "download \(download.identifier): the extension answered its authentication challenge: \(answer.dispositionName)"
                )
                return answer.response
            } catch {
                log("download \(download.identifier): its authentication challenge was not answered: \(error)")
                return (.performDefaultHandling, nil)
            }
        }
    }
}
