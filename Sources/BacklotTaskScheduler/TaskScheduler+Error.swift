/// Why the scheduler refused a request (Apple's `BGTaskScheduler.Error`, same codes).
///
/// ```swift
/// do { try scheduler.submit(request) }
/// catch let error as TaskScheduler.Error where error.code == .tooManyPendingTaskRequests { … }
/// ```
extension TaskScheduler {
    public struct Error: Swift.Error, Sendable, Hashable, CustomStringConvertible {
        public enum Code: Int, Sendable, Hashable {
            /// Background tasks do not run here: an App Clip, or background work turned off in the configuration.
            case unavailable = 1
            /// One refresh and ten processing requests may be pending at once.
            case tooManyPendingTaskRequests = 2
            /// The identifier is not in `BGTaskSchedulerPermittedIdentifiers`.
            case notPermitted = 3
            /// Only for continued-processing requests, which Backlot does not offer.
            case immediateRunIneligible = 4
        }

        public let code: Code
        public let message: String
        /// The request's identifier.
        public let identifier: String?

        public init(_ code: Code, _ message: String, identifier: String? = nil) {
            self.code = code
            self.message = message
            self.identifier = identifier
        }

        public static let unavailable = Code.unavailable
        public static let tooManyPendingTaskRequests = Code.tooManyPendingTaskRequests
        public static let notPermitted = Code.notPermitted
        public static let immediateRunIneligible = Code.immediateRunIneligible

        public var description: String { (identifier.map { "\($0): " } ?? "") + message }
    }
}

/// Lets `catch TaskScheduler.Error.notPermitted` match, as with Apple's bridged errors.
public func ~= (code: TaskScheduler.Error.Code, error: any Swift.Error) -> Bool {
    (error as? TaskScheduler.Error)?.code == code
}
