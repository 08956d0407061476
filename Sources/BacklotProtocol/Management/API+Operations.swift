import BacklotBasics

// What the dashboard reads besides the release workflow: the audit trail, download counts, keys.
extension API {
    /// One change in the audit trail.
    public struct AuditEntry: Codable, Sendable, Hashable {
        /// Who made it: a token, or the server itself (`role` `system`, no token).
        public struct Actor: Codable, Sendable, Hashable {
            @NullWhenAbsent public var tokenId: Int?
            public var label: String
            /// A ``Role`` or `system`.
            public var role: String
            /// The person the token belonged to (null for the server itself and for older entries).
            @NullWhenAbsent public var person: String?
            public init(tokenId: Int?, label: String, role: String, person: String?) {
                self.tokenId = tokenId
                self.label = label
                self.role = role
                self.person = person
            }
        }

        public var id: Int
        public var time: String
        public var actor: Actor
        @NullWhenAbsent public var app: String?
        @NullWhenAbsent public var pack: String?
        @NullWhenAbsent public var version: Int?
        /// One of ``API/auditActions``.
        public var action: String
        /// What changed (channel, percent, from, to, reason, …).
        public var details: [String: String]

        public init(
            id: Int, time: String, actor: Actor, app: String?, pack: String?, version: Int?, action: String,
            details: [String: String]
        ) {
            self.id = id
            self.time = time
            self.actor = actor
            self.app = app
            self.pack = pack
            self.version = version
            self.action = action
            self.details = details
        }
    }

    /// One page of the audit trail, newest first; `next` is the `before` of the next page.
    public struct AuditPage: Codable, Sendable, Hashable {
        public var entries: [AuditEntry]
        @NullWhenAbsent public var next: Int?
        public init(entries: [AuditEntry], next: Int?) {
            self.entries = entries
            self.next = next
        }
    }

    /// Requests and bytes of one kind of file on one UTC day.
    public struct DownloadRow: Codable, Sendable, Hashable {
        /// `YYYY-MM-DD`.
        public var date: String
        @NullWhenAbsent public var pack: String?
        @NullWhenAbsent public var version: Int?
        /// One of ``API/downloadKinds``.
        public var kind: String
        public var requests: Int64
        public var bytes: Int64
        public init(date: String, pack: String?, version: Int?, kind: String, requests: Int64, bytes: Int64) {
            self.date = date
            self.pack = pack
            self.version = version
            self.kind = kind
            self.requests = requests
            self.bytes = bytes
        }
    }

    /// An app's download counts from `from` to `to` (`GET …/downloads`).
    public struct Downloads: Codable, Sendable, Hashable {
        public var app: String
        public var from: String
        public var to: String
        public var rows: [DownloadRow]
        public init(app: String, from: String, to: String, rows: [DownloadRow]) {
            self.app = app
            self.from = from
            self.to = to
            self.rows = rows
        }
    }

    /// A signing key of the repository's history.
    public struct SigningKey: Codable, Sendable, Hashable {
        public var keyId: String
        public var publicKey: String
        public var since: String
        @NullWhenAbsent public var retired: String?
        public init(keyId: String, publicKey: String, since: String, retired: String?) {
            self.keyId = keyId
            self.publicKey = publicKey
            self.since = since
            self.retired = retired
        }
    }

    /// The signing key, its history and each catalog's expiry (`GET /api/keys`).
    public struct Keys: Codable, Sendable, Hashable {
        /// The key signing now.
        public struct Current: Codable, Sendable, Hashable {
            public var keyId: String
            public var publicKey: String
            public var since: String
            public init(keyId: String, publicKey: String, since: String) {
                self.keyId = keyId
                self.publicKey = publicKey
                self.since = since
            }
        }

        /// A published catalog and when it expires.
        public struct CatalogExpiry: Codable, Sendable, Hashable {
            public var app: String
            public var channel: Channel
            public var version: UInt64
            public var expires: String
            public init(app: String, channel: Channel, version: UInt64, expires: String) {
                self.app = app
                self.channel = channel
                self.version = version
                self.expires = expires
            }
        }

        public var current: Current
        public var history: [SigningKey]
        public var catalogs: [CatalogExpiry]
        public init(current: Current, history: [SigningKey], catalogs: [CatalogExpiry]) {
            self.current = current
            self.history = history
            self.catalogs = catalogs
        }
    }

    /// Every error's body: a stable code, a message that does not repeat its context, the thing it
    /// is about, and what to do.
    public struct ErrorAnswer: Codable, Sendable, Hashable {
        public struct Detail: Codable, Sendable, Hashable {
            public var code: String
            public var message: String
            @NullWhenAbsent public var context: String?
            @NullWhenAbsent public var hint: String?
            public init(code: String, message: String, context: String?, hint: String?) {
                self.code = code
                self.message = message
                self.context = context
                self.hint = hint
            }
        }

        public var error: Detail
        public init(error: Detail) { self.error = error }
    }
}
