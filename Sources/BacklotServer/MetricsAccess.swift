import BacklotHTTPServer

/// Who may read `GET /metrics` and where (`backlot serve --metrics-token-file`, `--metrics-listen`).
///
/// ```swift
/// let access = MetricsAccess(token: "s3cret", listening: try ListeningSocket(host: "127.0.0.1", port: 9464))
/// let server = try HostingServer(repository: repo, configuration: .init(port: 0), metricsAccess: access)
/// ```
public struct MetricsAccess: Sendable {
    /// A bearer token `/metrics` requires (`Authorization: Bearer TOKEN`); nil: open to all.
    public var token: String?
    /// A second socket that serves `/metrics` alone; the main one then answers `/metrics` with 404.
    public var listening: ListeningSocket?

    public init(token: String? = nil, listening: ListeningSocket? = nil) {
        self.token = token
        self.listening = listening
    }
}
