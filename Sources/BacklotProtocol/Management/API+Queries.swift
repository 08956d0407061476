import BacklotBasics
import BacklotFormat

// The query strings of the endpoints that take one: built by the client, read by the server.
extension API {
    /// The query of `GET /api/apps/{app}/releases`.
    public struct ReleaseQuery: Sendable, Hashable {
        /// Only this channel's requests.
        public var channel: Channel?
        /// Only requests of this status (one of ``API/releaseStatuses``).
        public var status: String?

        public init(channel: Channel? = nil, status: String? = nil) {
            self.channel = channel
            self.status = status
        }

        /// Read from a request's query.
        /// - Throws: ``BacklotError/Code/invalidInput`` naming the parameter.
        public init(_ query: [String: String]) throws {
            if let text = query["channel"] {
                guard let c = Channel(rawValue: text) else {
                    throw BacklotError(.invalidInput, "the channel must be \(Channel.caseList)", context: "channel")
                }
                channel = c
            }
            status = query["status"]
        }

        /// The query's items, for ``API/queryString(_:)``.
        public var items: [(name: String, value: String)] {
            (channel.map { [(name: "channel", value: $0.rawValue)] } ?? [])
                + (status.map { [(name: "status", value: $0)] } ?? [])
        }
    }

    /// The query of `GET /api/audit`.
    public struct AuditQuery: Sendable, Hashable {
        /// Only this app's entries.
        public var app: String?
        /// Only this action (one of ``API/auditActions``).
        public var action: String?
        /// Entries per page, 1 to ``API/Limits/auditPageLimit`` (100 when nil).
        public var limit: Int?
        /// Only entries older than this ID: the `next` of the page before.
        public var before: Int?

        public init(app: String? = nil, action: String? = nil, limit: Int? = nil, before: Int? = nil) {
            self.app = app
            self.action = action
            self.limit = limit
            self.before = before
        }

        /// Read from a request's query.
        /// - Throws: ``BacklotError/Code/invalidInput`` naming the parameter.
        public init(_ query: [String: String]) throws {
            app = try query["app"].map { text -> String in
                if let problem = PackID.problem(with: text) {
                    throw BacklotError(.invalidInput, problem.message, context: "app")
                }
                return text
            }
            action = query["action"]
            limit = try query["limit"].map {
                try CheckedInteger.parse(
                    $0, as: Int.self, "the query parameter limit", in: 1...API.Limits.auditPageLimit, context: "limit")
            }
            before = try query["before"].map {
                try CheckedInteger.parse(
                    $0, as: Int.self, "the query parameter before", in: 1...Int.max, context: "before")
            }
        }

        public var items: [(name: String, value: String)] {
            var items: [(name: String, value: String)] = []
            if let app { items.append((name: "app", value: app)) }
            if let action { items.append((name: "action", value: action)) }
            if let limit { items.append((name: "limit", value: String(limit))) }
            if let before { items.append((name: "before", value: String(before))) }
            return items
        }
    }

    /// The query of `GET /api/apps/{app}/downloads`.
    public struct DownloadsQuery: Sendable, Hashable {
        /// Days back from today, today included: 1 to ``API/Limits/longestDownloadReport`` (30 when nil).
        public var days: Int?

        public init(days: Int? = nil) { self.days = days }

        /// Read from a request's query.
        /// - Throws: ``BacklotError/Code/invalidInput`` naming the parameter.
        public init(_ query: [String: String]) throws {
            days = try query["days"].map {
                try CheckedInteger.parse(
                    $0, as: Int.self, "the query parameter days", in: 1...API.Limits.longestDownloadReport,
                    context: "days")
            }
        }

        public var items: [(name: String, value: String)] { days.map { [(name: "days", value: String($0))] } ?? [] }
    }
}
