import BacklotBasics
import BacklotHTTPClient
import BacklotTestSupport
import Foundation
import Synchronization
import Testing

@testable import BacklotClient

/// HTTP authentication for URL downloads (Apple's `download(_:didReceive:completionHandler:)`),
/// against a real nginx that requires Basic authentication.
@Suite(.serialized) struct AuthenticationChallengeTests {
    /// Answers each challenge with the next of `answers`, and records what it was asked and told.
    final class Answering: BADownloadManagerDelegate, @unchecked Sendable {
        let answers: [(URLSession.AuthChallengeDisposition, URLCredential?)]
        let asked = Mutex<[(realm: String?, method: String, failures: Int, status: Int?)]>([])
        let landing: DownloadLanding

        init(_ answers: [(URLSession.AuthChallengeDisposition, URLCredential?)], destination: String) {
            self.answers = answers
            landing = DownloadLanding(destination: destination)
        }

        func download(
            _ download: BADownload, didReceive challenge: URLAuthenticationChallenge,
            completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
        ) {
            let n = asked.withLock { a -> Int in
                a.append(
                    (
                        challenge.protectionSpace.realm, challenge.protectionSpace.authenticationMethod,
                        challenge.previousFailureCount, (challenge.failureResponse as? HTTPURLResponse)?.statusCode
                    ))
                return a.count - 1
            }
            let (disposition, credential) = answers[min(n, answers.count - 1)]
            completionHandler(disposition, credential)
        }

        func download(_ download: BADownload, finishedWithFileURL fileURL: URL) { landing.finished(fileURL) }
        func download(_ download: BADownload, failedWithError error: any Error) { landing.failed(error) }
    }

    /// Implements only the async form of the challenge callback: the default completion-handler
    /// form asks it from a task of its own (carrying the delegate and the challenge there, the proof
    /// of `Unchecked`).
    final class AnsweringAsync: BADownloadManagerDelegate, @unchecked Sendable {
        let credential: URLCredential
        let asked = Mutex<[Int]>([])
        let landing: DownloadLanding

        init(_ credential: URLCredential, destination: String) {
            self.credential = credential
            landing = DownloadLanding(destination: destination)
        }

        func download(
            _ download: BADownload, didReceive challenge: URLAuthenticationChallenge
        ) async -> (URLSession.AuthChallengeDisposition, URLCredential?) {
            asked.withLock { $0.append(challenge.previousFailureCount) }
            await Task.yield()  // answered after a suspension, from whatever thread resumes it
            return (.useCredential, credential)
        }

        func download(_ download: BADownload, finishedWithFileURL fileURL: URL) { landing.finished(fileURL) }
        func download(_ download: BADownload, failedWithError error: any Error) { landing.failed(error) }
    }

    static func schedule(
        _ server: NginxFileServer, name: String, delegate: any BADownloadManagerDelegate, answerSeconds: Int = 60
    ) throws
        -> BADownloadManager
    {
        let manager = try BADownloadManager(containerPath: server.dir.at("device-\(name)"))
        manager.challengeAnswerSeconds = answerSeconds
        manager.delegate = delegate
        try manager.scheduleDownload(
            BAURLDownload(
                identifier: name, request: URLRequest(url: server.url), essential: false,
                fileSize: server.bytes.count, applicationGroupIdentifier: "group.com.example.game", priority: .default))
        return manager
    }

    static func run(
        _ server: NginxFileServer, _ answers: [(URLSession.AuthChallengeDisposition, URLCredential?)], name: String
    ) throws -> Answering {
        let delegate = Answering(answers, destination: server.dir.at("\(name).bin"))
        let manager = try schedule(server, name: name, delegate: delegate)
        #expect(delegate.landing.done.wait(timeout: .now() + 120) == .success, "the download ends")
        manager.delegate = nil
        return delegate
    }

    @Test func theDelegatesCredentialIsSentAndARefusedOneIsAskedForAgain() throws {
        let server = try NginxFileServer(seed: 401)
        let wrong = URLCredential(user: "game", password: "guess", persistence: .forSession)
        let right = URLCredential(user: "game", password: "secret", persistence: .forSession)
        let d = try Self.run(server, [(.useCredential, wrong), (.useCredential, right)], name: "retry")
        #expect(d.landing.outcome.withLock { $0 } == "finished")
        let asked = d.asked.withLock { $0 }
        #expect(asked.count == 2)
        #expect(asked.map(\.realm) == ["Levels", "Levels"])
        #expect(asked.allSatisfy { $0.method == NSURLAuthenticationMethodHTTPBasic && $0.status == 401 })
        #expect(asked.map(\.failures) == [0, 1], "the second challenge counts the refused credential")
        #expect(Array(try Data(contentsOf: URL(fileURLWithPath: server.dir.at("retry.bin")))) == server.bytes)
    }

    /// The async form runs in a task, on Swift's cooperative threads, which a full `swift test`
    /// shares with suites that hold them for minutes: the test waits without holding one, and
    /// gives the answer as long as a CI run may need (it got no thread within 60 s in one).
    @Test func aDelegateWithOnlyTheAsyncFormIsAskedFromATask() async throws {
        let server = try NginxFileServer(seed: 401)
        let right = URLCredential(user: "game", password: "secret", persistence: .forSession)
        let delegate = AnsweringAsync(right, destination: server.dir.at("async.bin"))
        let manager = try Self.schedule(server, name: "async", delegate: delegate, answerSeconds: 900)
        let deadline = ContinuousClock.now + .seconds(1_000)
        while delegate.landing.outcome.withLock({ $0 }) == nil && ContinuousClock.now < deadline {
            try await Task.sleep(nanoseconds: 10_000_000)
        }
        manager.delegate = nil
        #expect(delegate.landing.outcome.withLock { $0 } == "finished")
        #expect(delegate.asked.withLock { $0 } == [0])
        #expect(Array(try Data(contentsOf: URL(fileURLWithPath: server.dir.at("async.bin")))) == server.bytes)
    }

    @Test func cancellingOrDefaultHandlingFailsTheDownload() throws {
        let server = try NginxFileServer(seed: 401)
        let cancelled = try Self.run(server, [(.cancelAuthenticationChallenge, nil)], name: "cancel")
        let why = cancelled.landing.outcome.withLock { $0 } ?? ""
        #expect(why.contains("authentication challenge of") && why.contains("was cancelled"), "\(why)")
        let declined = try Self.run(server, [(.performDefaultHandling, nil)], name: "default")
        #expect(
            declined.landing.outcome.withLock { $0 }?.contains("401") == true,
            "\(declined.landing.outcome.withLock { $0 } ?? "")")
        let rejected = try Self.run(server, [(.rejectProtectionSpace, nil)], name: "reject")
        #expect(rejected.landing.outcome.withLock { $0 }?.contains("401") == true)
        #expect(!FileSystem.exists(server.dir.at("cancel.bin")) && !FileSystem.exists(server.dir.at("default.bin")))
    }
}
