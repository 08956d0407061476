import BacklotBasics
import Foundation

/// Where an object store is and how to address it: `--s3-endpoint URL [--s3-region REGION] [--s3-path-style]`.
///
/// ```swift
/// let configuration = try S3Configuration(endpoint: "http://127.0.0.1:7480", pathStyle: true)
/// ```
public struct S3Configuration: Sendable {
    /// `http` or `https`.
    public let scheme: String
    /// The endpoint's host (a name, an IPv4 address, or a bracketed IPv6 address).
    public let host: String
    /// The port, when the endpoint names one.
    public let port: UInt16?
    /// The region requests are signed for (`us-east-1` by default).
    public var region: String
    /// Path-style addressing (`http://host/bucket/key`) rather than virtual-hosted
    /// (`http://bucket.host/key`). Path style is used anyway for an endpoint that is an IP address
    /// and for a bucket name that cannot be a DNS label (dots, uppercase, underscores).
    public var pathStyle: Bool
    /// A PEM file of CA certificates to trust for an `https` endpoint, or nil for the system's.
    public var caFile: String?
    /// How often and how patiently a failed request is tried again.
    public var retry: S3RetryPolicy
    /// The clock requests are signed with (the system's by default; a test injects a wrong one).
    public var clock: @Sendable () -> Date
    /// Seconds without progress after which a transfer fails.
    public var stallTimeout: Int

    /// The endpoint as given, normalised: `scheme://host[:port]`.
    public var endpoint: String { "\(scheme)://\(hostHeader)" }

    /// The `Host` of a request to the endpoint itself (the port left out when it is the scheme's default).
    public var hostHeader: String {
        guard let port, !(scheme == "http" && port == 80), !(scheme == "https" && port == 443) else { return host }
        return "\(host):\(port)"
    }

    /// - Parameter endpoint: `http[s]://HOST[:PORT]` (a trailing `/` is allowed; no other path).
    /// - Throws: ``BacklotError/Code/usage`` for an endpoint that is not such a URL, or an empty region.
    public init(
        endpoint: String, region: String = "us-east-1", pathStyle: Bool = false, caFile: String? = nil,
        retry: S3RetryPolicy = S3RetryPolicy(), stallTimeout: Int = 60,
        clock: @escaping @Sendable () -> Date = { Date() }
    ) throws {
        func bad(_ why: String) -> BacklotError {
            BacklotError(
                .usage, "the S3 endpoint '\(endpoint)' \(why)", context: "--s3-endpoint",
                hint:
                    "give it as http://HOST:PORT or https://HOST (for the test radosgw: scripts/services env DIR prints BACKLOT_S3_ENDPOINT)"
            )
        }
        guard let sep = endpoint.range(of: "://") else { throw bad("has no scheme") }
        let scheme = endpoint[..<sep.lowerBound].lowercased()
        guard scheme == "http" || scheme == "https" else { throw bad("is neither http:// nor https://") }
        var rest = Substring(endpoint[sep.upperBound...])
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        guard !rest.isEmpty, !rest.contains("/"), !rest.contains("?"), !rest.contains("#"), !rest.contains("@") else {
            throw bad("must be scheme://host[:port] with no path, query or user")
        }
        var host = String(rest)
        var port: UInt16?
        if let colon = rest.lastIndex(of: ":"), !rest[colon...].contains("]") {
            guard let p = CheckedInteger.parse(rest[rest.index(after: colon)...], as: UInt16.self), p > 0 else {
                throw bad("has a port that is not a number from 1 to 65535")
            }
            port = p
            host = String(rest[..<colon])
        }
        guard !host.isEmpty, host.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else { throw bad("has no valid host") }
        guard !region.isEmpty, region.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "/") }) else {
            throw BacklotError(
                .usage, "the S3 region '\(region)' is not a region name", context: "--s3-region",
                hint: "for example us-east-1 (radosgw accepts any)")
        }
        self.scheme = scheme
        self.host = host.lowercased()
        self.port = port
        self.region = region
        self.pathStyle = pathStyle
        self.caFile = caFile
        self.retry = retry
        self.stallTimeout = stallTimeout
        self.clock = clock
    }

    /// Whether the host is an IP address (virtual-hosted addressing cannot work then).
    var hostIsAddress: Bool {
        host.hasPrefix("[")
            || host.split(separator: ".").count == 4 && host.split(separator: ".").allSatisfy { UInt8($0) != nil }
    }

    /// Whether requests for `bucket` put it in the path.
    func usesPathStyle(for bucket: String) -> Bool {
        pathStyle || hostIsAddress || !S3Client.isDNSCompatible(bucket)
    }
}
