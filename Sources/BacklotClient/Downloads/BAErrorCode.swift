import Foundation

/// The error domain of Apple's `BAErrorCode` (Apple's name, kept).
// swift-format-ignore: AlwaysUseLowerCamelCase
public let BAErrorDomain = "com.apple.backgroundassets.error"

/// Apple's Background Assets error codes, with their raw values (the numbers
/// ``BackgroundDownloadError/code`` and ``DownloadManager/DeliveredError/code`` carry).
public enum BAErrorCode: Int, Sendable, Hashable, CaseIterable {
    case downloadInvalid = 0
    case callFromExtensionNotAllowed = 50
    case callFromInactiveProcessNotAllowed = 51
    case callerConnectionNotAccepted = 55
    case callerConnectionInvalid = 56
    case downloadAlreadyScheduled = 100
    case downloadNotScheduled = 101
    case downloadFailedToStart = 102
    case downloadAlreadyFailed = 103
    case downloadEssentialDownloadNotPermitted = 109
    case downloadBackgroundActivityProhibited = 111
    case downloadWouldExceedAllowance = 112
    case downloadDoesNotExist = 113
    case sessionDownloadDisallowedByDomain = 202
    case sessionDownloadDisallowedByAllowance = 203
    case sessionDownloadAllowanceExceeded = 204
    case sessionDownloadNotPermittedBeforeAppLaunch = 206
}

/// A Background Assets error as Apple's Swift overlay shows it (`BAError`, whose `Code` is ``BAErrorCode``).
///
/// ```swift
/// do { try BADownloadManager.shared.scheduleDownload(download) } catch let error as BackgroundDownloadError {
///     if error.errorCode == .downloadAlreadyScheduled { … }
/// }
/// ```
public struct BAError: Error, Sendable, Hashable, CustomStringConvertible {
    public typealias Code = BAErrorCode
    public let code: Code
    public static var errorDomain: String { BAErrorDomain }
    public init(_ code: Code) { self.code = code }
    public var description: String { "\(BAErrorDomain) error \(code.rawValue) (\(code))" }
}

extension BackgroundDownloadError {
    /// Apple's code for this error.
    public var errorCode: BAErrorCode? { BAErrorCode(rawValue: code) }
}

extension DownloadManager.DeliveredError {
    /// Apple's code for this error, when the agent recorded one.
    public var errorCode: BAErrorCode? { code.flatMap(BAErrorCode.init(rawValue:)) }
}
