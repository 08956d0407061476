import BacklotBasics
import CCurl

#if canImport(Glibc)
import Glibc
#endif

extension HTTPClient {
    /// Connections (and TLS sessions) kept open between the requests of every copy of one
    /// ``HTTPClient`` that holds it (``HTTPClient/connectionCache``), on any thread: a device's
    /// catalog check and its key-list probe, or one download connection's Range requests one after
    /// another, then cost one TCP and TLS handshake rather than one each. libcurl's share interface
    /// (`CURL_LOCK_DATA_CONNECT`, `CURL_LOCK_DATA_SSL_SESSION`, `CURL_LOCK_DATA_DNS`); a connection
    /// the server closed meanwhile is found dead and replaced by libcurl before it is used.
    ///
    /// Used only for requests without a body (``HTTPClient/send(_:_:headers:body:expectedBodySize:bodyLimit:progress:)``
    /// with `body` nil): an upload over a connection that died while idle could not be sent again.
    ///
    /// ```swift
    /// var client = HTTPClient()
    /// client.connectionCache = HTTPClient.ConnectionCache()
    /// ```
    public final class ConnectionCache: @unchecked Sendable {
        // Sendable: `share` and `locks` are set once in init and never reassigned; libcurl reaches
        // the shared data only between the lock and unlock callbacks below, which take the mutex
        // of that kind of data (ConnectionCacheTests run requests from several threads at once).
        let share: UnsafeMutableRawPointer
        private let locks: UnsafeMutablePointer<pthread_mutex_t>
        private static let lockCount = Int(CURL_LOCK_DATA_LAST.rawValue) + 1

        /// - Throws: ``BacklotError/Code/library`` when libcurl cannot make a share.
        public init() throws {
            guard let share = curl_share_init() else {
                throw BacklotError(.library, "libcurl could not make a connection share")
            }
            self.share = share
            locks = .allocate(capacity: Self.lockCount)
            for i in 0..<Self.lockCount { pthread_mutex_init(locks + i, nil) }
            let me = Unmanaged.passUnretained(self).toOpaque()
            _ = ccurl_share_setopt_ptr(share, CURLSHOPT_USERDATA, me)
            _ = ccurl_share_setopt_lock(share) { _, data, _, user in
                guard let user else { return }
                let cache = Unmanaged<ConnectionCache>.fromOpaque(user).takeUnretainedValue()
                pthread_mutex_lock(cache.lock(for: data))
            }
            _ = ccurl_share_setopt_unlock(share) { _, data, user in
                guard let user else { return }
                let cache = Unmanaged<ConnectionCache>.fromOpaque(user).takeUnretainedValue()
                pthread_mutex_unlock(cache.lock(for: data))
            }
            for data in [CURL_LOCK_DATA_CONNECT, CURL_LOCK_DATA_SSL_SESSION, CURL_LOCK_DATA_DNS] {
                _ = ccurl_share_setopt_long(share, CURLSHOPT_SHARE, Int(data.rawValue))
            }
        }

        deinit {
            // Every transfer that used the share has ended (each holds the client, and with it
            // this cache, until its handle is cleaned up), so the cleanup cannot find it in use.
            curl_share_cleanup(share)
            for i in 0..<Self.lockCount { pthread_mutex_destroy(locks + i) }
            locks.deallocate()
        }

        private func lock(for data: curl_lock_data) -> UnsafeMutablePointer<pthread_mutex_t> {
            locks + min(Int(data.rawValue), Self.lockCount - 1)
        }

        /// Attaches a transfer to the share.
        func attach(_ handle: UnsafeMutableRawPointer) {
            _ = ccurl_setopt_ptr(handle, CURLOPT_SHARE, share)
        }
    }
}
