import BacklotBasics
import BacklotClient
import BacklotJSON
import Foundation
import Synchronization

/// The extension's side of a call: read it, call the extension, write the answer.
enum ExtensionHost {
    /// Takes a reserved outcome for this process (``DownloadManager/claimReservation(_:containerPath:)``);
    /// true when there is nothing to claim (a call without a record).
    static func claim(_ outcome: Int64?) throws -> Bool {
        guard let outcome, let container = ProcessInfo.processInfo.environment["BACKLOT_CONTAINER"] else { return true }
        return try DownloadManager.claimReservation(outcome, containerPath: container)
    }

    static func serve(_ ext: some DownloaderExtension, arguments: [String]) async -> Int32 {
        // Apple's calls refused in an extension are refused
        DownloadManager.isExtensionProcess.store(true, ordering: .relaxed)
        guard arguments.count == 4, arguments[1] == "--backlot-extension-call" else {
            FileHandle.standardError.write(
                Data(
                    "this is a Backlot downloader extension; the agent runs it (backlot agent, or backlot simulate)\n"
                        .utf8))
            return 2
        }
        do {
            let bytes = try FileDescriptor.readWholeFile(arguments[2], atMost: 64 << 20, what: "the agent's call")
            let call = try ExtensionCall(decoding: bytes, source: arguments[2])
            var reply = ExtensionReply()
            switch call {
            case .shouldDownload(let packs):
                let managed = ext as? any ManagedDownloaderExtension
                let keep = packs.map { managed?.shouldDownload($0) ?? true }
                reply.accepted = zip(packs, keep).filter { $0.1 }.map(\.0.id)
                reply.declined = zip(packs, keep).filter { !$0.1 }.map(\.0.id)
            case .downloads(let request, let path, let info):
                reply.downloads = ext.downloads(
                    for: request, manifestURL: URL(fileURLWithPath: path), extensionInfo: info
                )
                .sorted { $0.identifier < $1.identifier }
            case .finished(let d, let path, let outcome):
                // Claimed first: an outcome the agent released to the app meanwhile is not delivered here too.
                if try claim(outcome) { ext.backgroundDownload(d, finishedWithFileURL: URL(fileURLWithPath: path)) }
            case .failed(let d, let message, let code, let outcome):
                if try claim(outcome) {
                    ext.backgroundDownload(
                        d, failedWithError: DownloadManager.DeliveredError(code: code, message: message))
                }
            case .challenge(let d, let realm, let failures):
                let challenge = DownloadManager.basicChallenge(for: d, realm: realm, previousFailures: failures)
                reply.challenge = ChallengeAnswer(await ext.backgroundDownload(d, didReceive: challenge))
            case .serverTrust(let d, let certificates):
                let challenge = DownloadManager.serverTrustChallenge(for: d, certificates: certificates)
                reply.challenge = ChallengeAnswer(await ext.backgroundDownload(d, didReceive: challenge))
            }
            TestStopPoint.reach("handover.extensionAnswered", defaultTerm: true)
            let out = arguments[3]
            try Data(try reply.encoded()).write(to: URL(fileURLWithPath: out + ".tmp"))
            guard rename(out + ".tmp", out) == 0 else { throw SystemCall.error("rename", path: out) }
            return 0
        } catch {
            FileHandle.standardError.write(Data("extension: \(error)\n".utf8))
            return 1
        }
    }
}
