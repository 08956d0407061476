import Foundation

/// What a running app is told about its URL downloads (Apple's `BADownloadManagerDelegate`); every
/// method is optional (a default does nothing). Set it as ``BADownloadManager/delegate``: while an
/// app has one, it receives the outcomes of the downloads the background agent ran, instead of
/// the downloader extension.
///
/// ```swift
/// final class Downloads: BADownloadManagerDelegate {
///     func download(_ download: BADownload, finishedWithFileURL fileURL: URL) {
///         try? FileManager.default.moveItem(at: fileURL, to: destination)   // before returning, or it is deleted
///     }
///     func download(_ download: BADownload, failedWithError error: any Error) { … }
/// }
/// BADownloadManager.shared.delegate = downloads   // weak: keep `downloads` alive
/// ```
///
/// Methods are called on a background thread of the manager; `finishedWithFileURL` runs under the
/// container's exclusive control.
public protocol BADownloadManagerDelegate: AnyObject {
    func downloadDidBegin(_ download: BADownload)
    func downloadDidPause(_ download: BADownload)
    func download(
        _ download: BADownload, didWriteBytes bytesWritten: Int64, totalBytesWritten: Int64,
        totalBytesExpectedToWrite totalExpectedBytes: Int64)
    /// An authentication challenge (Apple's completion-handler form).
    func download(
        _ download: BADownload, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void)
    /// An authentication challenge (Apple's async form). The completion-handler form's default asks
    /// this one, whose default answers `.performDefaultHandling`.
    func download(
        _ download: BADownload, didReceive challenge: URLAuthenticationChallenge
    ) async -> (URLSession.AuthChallengeDisposition, URLCredential?)
    func download(_ download: BADownload, failedWithError error: any Error)
    /// Move the file before returning: it is deleted afterwards.
    func download(_ download: BADownload, finishedWithFileURL fileURL: URL)
}

extension BADownloadManagerDelegate {
    public func downloadDidBegin(_ download: BADownload) {}
    public func downloadDidPause(_ download: BADownload) {}
    public func download(
        _ download: BADownload, didWriteBytes bytesWritten: Int64, totalBytesWritten: Int64,
        totalBytesExpectedToWrite totalExpectedBytes: Int64
    ) {}
    public func download(
        _ download: BADownload, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        // A delegate that implements only the async form is asked through it.
        let delegate = Unchecked(value: self)
        let asked = Unchecked(value: challenge)
        Task {
            let (disposition, credential) = await delegate.value.download(download, didReceive: asked.value)
            completionHandler(disposition, credential)
        }
    }
    public func download(
        _ download: BADownload, didReceive challenge: URLAuthenticationChallenge
    ) async -> (URLSession.AuthChallengeDisposition, URLCredential?) {
        (.performDefaultHandling, nil)
    }
    public func download(_ download: BADownload, failedWithError error: any Error) {}
    public func download(_ download: BADownload, finishedWithFileURL fileURL: URL) {}
}

/// A value handed to a task that runs the delegate's async method: the app's delegate, or the
/// challenge made for this one call.
// Safe because: the challenge is made for this call and read by that task alone; the delegate is only called
// through, never read or written: it is the app's object, which the manager calls from its download threads (the
// background queue's and a promoted download's), as Apple's calls it from a queue of its own, so an app's delegate
// already takes calls from threads other than its main one; the task adds one such call (Apple's protocol is not
// `Sendable` because it predates it).
// Tested: `AuthenticationChallengeTests.aDelegateWithOnlyTheAsyncFormIsAskedFromATask`.
struct Unchecked<T>: @unchecked Sendable {
    let value: T
}
