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

/// A value handed to a task that runs the delegate's async method (the delegate is the app's object,
/// called from one thread at a time).
// Safe because: it carries the app's delegate or a value for it into the one task that calls the delegate's async
// method; the delegate is called from one thread at a time, as Apple's documents it, and nothing else reads the
// value.
// Tested: `AuthenticationChallengeTests.aDelegateWithOnlyTheAsyncFormIsAskedFromATask`.
struct Unchecked<T>: @unchecked Sendable {
    let value: T
}
