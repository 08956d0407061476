import BacklotBasics
import Foundation

/// The keys an S3 request is signed with: an access key ID, its secret, and an optional session
/// token (temporary credentials), as the AWS ecosystem passes them.
///
/// ```swift
/// let credentials = try S3Credentials.fromEnvironment()   // AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN
/// ```
public struct S3Credentials: Sendable, Hashable, CustomStringConvertible {
    public var accessKeyID: String
    public var secretAccessKey: String
    /// Sent as `x-amz-security-token` (and signed) when set.
    public var sessionToken: String?

    public init(accessKeyID: String, secretAccessKey: String, sessionToken: String? = nil) {
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
        self.sessionToken = sessionToken
    }

    /// The credentials in `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and (optional) `AWS_SESSION_TOKEN`.
    /// - Throws: ``BacklotError/Code/usage`` naming the variable that is missing or empty.
    public static func fromEnvironment(_ environment: [String: String]) throws -> S3Credentials {
        func value(_ name: String) -> String? {
            guard let v = environment[name]?.trimmingWhitespace, !v.isEmpty else { return nil }
            return v
        }
        guard let id = value("AWS_ACCESS_KEY_ID") else {
            throw BacklotError(
                .usage, "AWS_ACCESS_KEY_ID is not set",
                hint:
                    "export AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY with the object store's keys (scripts/services env DIR prints them for the test radosgw)"
            )
        }
        guard let secret = value("AWS_SECRET_ACCESS_KEY") else {
            throw BacklotError(
                .usage, "AWS_SECRET_ACCESS_KEY is not set", hint: "export it with the secret of the access key \(id)")
        }
        return S3Credentials(accessKeyID: id, secretAccessKey: secret, sessionToken: value("AWS_SESSION_TOKEN"))
    }

    /// The credentials in this process's environment (see ``fromEnvironment(_:)``).
    public static func fromEnvironment() throws -> S3Credentials {
        try fromEnvironment(ProcessInfo.processInfo.environment)
    }

    /// The access key ID only: a secret is never printed.
    public var description: String {
        "S3Credentials(\(accessKeyID)\(sessionToken == nil ? "" : ", with a session token"))"
    }
}

extension String {
    var trimmingWhitespace: String {
        var s = Substring(self)
        while let c = s.first, c == " " || c == "\t" || c == "\n" || c == "\r" { s.removeFirst() }
        while let c = s.last, c == " " || c == "\t" || c == "\n" || c == "\r" { s.removeLast() }
        return String(s)
    }
}
