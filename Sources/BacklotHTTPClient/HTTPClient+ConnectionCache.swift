import BacklotBasics
import CCurl
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

extension HTTPClient {
    /// Connections kept open between the requests of every copy of one ``HTTPClient`` that holds
    /// it (``HTTPClient/connectionCache``), on any thread: a device's catalog check and its
    /// key-list probe, or one download connection's Range requests one after another, then cost
    /// one TCP and TLS handshake rather than one each.
    ///
    /// A request takes an idle libcurl handle from the cache (or makes one) and gives it back when
    /// it ends, its options reset and its connection still open; a handle is only ever used by one
    /// thread at a time, and its connections are its own. (libcurl's shared connection cache,
    /// `CURL_LOCK_DATA_CONNECT`, is not safe across threads in the libcurl of Debian 12: its known
    /// bug 11.11.) TLS sessions and DNS answers are shared between the handles through a libcurl
    /// share with locks, which is safe, so a handle's first connection resumes a session another
    /// one made. A connection the server closed meanwhile is found dead and replaced by libcurl.
    ///
    /// Used only for requests without a body (``HTTPClient/send(_:_:headers:body:expectedBodySize:bodyLimit:progress:)``
    /// with `body` nil): an upload over a connection that died while idle could not be sent again.
    ///
    /// ```swift
    /// var client = HTTPClient()
    /// client.connectionCache = try HTTPClient.ConnectionCache()
    /// ```
    // Safe because: `share` and `locks` are set once in init and never reassigned; libcurl reaches
    // the shared data (TLS sessions, DNS) only between the lock and unlock callbacks below, which
    // take the mutex of that kind of data; idle handles are behind `idle`'s lock, and a handle
    // taken from it belongs to the one request that took it until it is given back
    // (`ConnectionCacheTests.threadsAtOnceEachTakeAConnectionOfTheirOwn`).
    public final class ConnectionCache: @unchecked Sendable {
        private let share: UnsafeMutableRawPointer
        private let locks: UnsafeMutablePointer<pthread_mutex_t>
        /// Idle handles, as their addresses (a pointer is not Sendable; an address is).
        private let idle = Mutex<[UInt]>([])
        private static let lockCount = Int(CURL_LOCK_DATA_LAST.rawValue) + 1
        /// The most idle handles kept (each with its open connections); more are closed.
        public static let keptHandles = 8

        /// - Throws: ``BacklotError/Code/library`` when libcurl cannot make a share.
        public init() throws {
            guard let share = curl_share_init() else {
                throw BacklotError(.library, "libcurl could not make a share for TLS sessions")
            }
            self.share = share
            locks = .allocate(capacity: Self.lockCount)
            for i in 0..<Self.lockCount { pthread_mutex_init(locks + i, nil) }
            // The callbacks get the mutexes themselves (not this object, which may be in its deinit).
            _ = ccurl_share_setopt_ptr(share, CURLSHOPT_USERDATA, UnsafeMutableRawPointer(locks))
            _ = ccurl_share_setopt_lock(share) { _, data, _, user in
                guard let mutex = ConnectionCache.mutex(for: data, in: user) else { return }
                pthread_mutex_lock(mutex)
            }
            _ = ccurl_share_setopt_unlock(share) { _, data, user in
                guard let mutex = ConnectionCache.mutex(for: data, in: user) else { return }
                pthread_mutex_unlock(mutex)
            }
            for data in [CURL_LOCK_DATA_SSL_SESSION, CURL_LOCK_DATA_DNS] {
                _ = ccurl_share_setopt_long(share, CURLSHOPT_SHARE, Int(data.rawValue))
            }
        }

        deinit {
            // Every request that took a handle gave it back (each holds the client, and with it
            // this cache, until it has), so all of them are here and none uses the share.
            for address in idle.withLock({ $0 }) { curl_easy_cleanup(UnsafeMutableRawPointer(bitPattern: address)) }
            // A share still in use (which the above rules out) keeps its mutexes: never freed under it.
            guard curl_share_cleanup(share) == CURLSHE_OK else { return }
            for i in 0..<Self.lockCount { pthread_mutex_destroy(locks + i) }
            locks.deallocate()
        }

        /// The mutex of one kind of shared data, from the callbacks' user pointer (the mutexes).
        private static func mutex(
            for data: curl_lock_data, in user: UnsafeMutableRawPointer?
        ) -> UnsafeMutablePointer<pthread_mutex_t>? {
            guard let user else { return nil }
            return user.assumingMemoryBound(to: pthread_mutex_t.self) + min(Int(data.rawValue), lockCount - 1)
        }

        /// An idle handle (its connections open) or a new one, attached to the share; nil when
        /// libcurl cannot make one.
        func take() -> UnsafeMutableRawPointer? {
            let kept = idle.withLock { $0.popLast() }.flatMap { UnsafeMutableRawPointer(bitPattern: $0) }
            guard let handle = kept ?? curl_easy_init() else { return nil }
            _ = ccurl_setopt_ptr(handle, CURLOPT_SHARE, share)
            return handle
        }

        /// Takes back a handle whose request has ended: its options reset (nothing of the ended
        /// request is kept but its connection), kept if fewer than ``keptHandles`` are idle.
        func giveBack(_ handle: UnsafeMutableRawPointer) {
            curl_easy_reset(handle)
            let address = UInt(bitPattern: handle)
            let kept = idle.withLock { handles -> Bool in
                guard handles.count < Self.keptHandles else { return false }
                handles.append(address)
                return true
            }
            if !kept { curl_easy_cleanup(handle) }
        }
    }
}
