import BacklotBasics
import BacklotS3
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A real S3 server for tests: Ceph radosgw on a single-node cluster, started through
/// `scripts/services` (exactly as developers and CI start it) once per test process, in a
/// temporary folder, and stopped when the process exits.
///
/// Nothing is left running when the test process dies instead: the script's watcher (`--owner`)
/// stops the cluster once this process has gone, and `scripts/test` stops whatever carries its
/// run marker.
///
/// ```swift
/// let store = try ObjectStore.shared()
/// let (s3, bucket) = try store.newBucket("put")
/// try s3.putObject(bucket: bucket, key: "a", body: .bytes([1, 2, 3]))
/// ```
public final class ObjectStore: Sendable {
    /// The cluster's folder (ceph.conf, logs, pid files).
    public let directory: String
    /// `http://127.0.0.1:PORT`.
    public let endpoint: String
    /// The S3 user's keys.
    public let credentials: S3Credentials
    /// How long `scripts/services start` took.
    public let startDuration: Duration

    private static let sharedStore = Mutex<Result<ObjectStore, BacklotError>?>(nil)
    /// The second radosgw, for tests that stop its gateway; held by one such test at a time.
    private static let privateStore = Mutex<Result<ObjectStore, BacklotError>?>(nil)
    private static let counter = Mutex(0)

    private init(directory: String) throws {
        self.directory = directory
        let started = ContinuousClock.now
        try Self.run(["start", "radosgw", directory, "--owner", String(getpid()), "--remove"], directory: directory)
        startDuration = ContinuousClock.now - started
        let values = try ServicesScript.environment(of: directory)
        guard let endpoint = values["BACKLOT_S3_ENDPOINT"] else {
            throw BacklotError(.io, "scripts/services env printed no BACKLOT_S3_ENDPOINT", context: directory)
        }
        self.endpoint = endpoint
        credentials = try S3Credentials.fromEnvironment(values)
    }

    /// The radosgw of this test process, started on first use (about 13 s), stopped at exit.
    /// - Throws: what `scripts/services start` said when it could not start (packages missing: run scripts/bootstrap).
    public static func shared() throws -> ObjectStore {
        let outcome: Result<ObjectStore, BacklotError> = sharedStore.withLock { slot in
            if let slot { return slot }
            let result = start(label: "shared")
            if case .success = result { atexit { ObjectStore.stopShared() } }
            slot = result
            return result
        }
        return try outcome.get()
    }

    /// Lends `body` a radosgw of its own, which it may stop and start (``stopGateway()``): a
    /// second cluster, started on first use, that no other test uses, and that tests stopping a
    /// gateway take in turns (suites run in parallel: stopping the shared gateway would fail
    /// every other test that uses it meanwhile).
    ///
    /// ```swift
    /// try ObjectStore.withPrivateGateway { store in
    ///     try store.stopGateway()
    ///     defer { try? store.startGateway() }
    ///     …
    /// }
    /// ```
    public static func withPrivateGateway<T: Sendable>(_ body: (ObjectStore) throws -> T) throws -> T {
        try privateStore.withLock { slot in
            if slot == nil {
                let started = start(label: "private")
                if case .success = started { atexit { ObjectStore.stopShared() } }
                slot = started
            }
            return try body(try slot!.get())
        }
    }

    /// Starts a cluster in a new temporary folder.
    private static func start(label: String) -> Result<ObjectStore, BacklotError> {
        do {
            let dir = try FileSystem.makeTemporaryDirectory(
                in: FileManager.default.temporaryDirectory.path, prefix: "backlot-radosgw-")
            let store = try ObjectStore(directory: dir)
            print("ObjectStore (\(label)): radosgw at \(store.endpoint) started in \(store.startDuration) (\(dir))")
            return .success(store)
        } catch let e as BacklotError {
            return .failure(e)
        } catch {
            return .failure(BacklotError(.io, "radosgw could not be started: \(error)"))
        }
    }

    /// Stops the clusters and removes their folders (registered with `atexit`).
    static func stopShared() {
        if case .success(let store)? = sharedStore.withLock({ $0 }) { store.stop() }
        if case .success(let store)? = privateStore.withLock({ $0 }) { store.stop() }
    }

    /// A client for this radosgw (path-style unless asked otherwise; a clock to sign with, for skew tests).
    public func client(
        pathStyle: Bool = true, credentials: S3Credentials? = nil, retry: S3RetryPolicy = S3RetryPolicy(),
        clock: (@Sendable () -> Date)? = nil
    ) throws -> S3Client {
        var endpoint = self.endpoint
        // bucket.localhost resolves to loopback in libcurl
        if !pathStyle { endpoint = endpoint.replacingOccurrences(of: "127.0.0.1", with: "localhost") }
        let configuration = try S3Configuration(
            endpoint: endpoint, pathStyle: pathStyle, retry: retry, clock: clock ?? { Date() })
        return S3Client(configuration: configuration, credentials: credentials ?? self.credentials)
    }

    /// A client and a bucket of its own for one test (`t-LABEL-N-PID`).
    public func newBucket(_ label: String, pathStyle: Bool = true) throws -> (S3Client, String) {
        let n = Self.counter.withLock {
            $0 += 1
            return $0
        }
        let bucket = "t-\(label.lowercased())-\(n)-\(getpid())"
        let s3 = try client(pathStyle: pathStyle)
        try s3.createBucket(bucket)
        return (s3, bucket)
    }

    /// Stops the gateway only (`scripts/services stop DIR radosgw`); the cluster and its data stay.
    public func stopGateway() throws { try Self.run(["stop", directory, "radosgw"], directory: directory) }

    /// Starts the gateway again on the same port (`scripts/services start radosgw DIR`).
    public func startGateway() throws {
        try Self.run(["start", "radosgw", directory, "--owner", String(getpid()), "--remove"], directory: directory)
    }

    /// Stops everything and removes the folder.
    public func stop() {
        _ = try? Self.run(["stop", directory], directory: directory)
        FileSystem.removeTree(directory)
    }

    /// ``ServicesScript/run(_:folder:)`` on this cluster's folder.
    @discardableResult
    static func run(_ arguments: [String], directory: String) throws -> String {
        try ServicesScript.run(arguments, folder: directory)
    }
}
