import BacklotBasics
import BacklotCommands
import BacklotRepository
import BacklotS3
import BacklotTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `backlot serve --storage s3://BUCKET[/PREFIX] --s3-endpoint URL` against a real radosgw: the
/// published tree goes to the bucket; a missing bucket or wrong credentials stop the start with
/// an error naming the endpoint and the bucket.
@Suite(.serialized) struct ServeStorageTests {
    /// Runs `backlot serve` with `arguments` and the S3 variables of `environment`; returns its
    /// status and output when it ends by itself, or, when it prints `until`, stops it (SIGTERM) first.
    func serve(
        _ arguments: [String], environment: [String: String], until marker: String? = nil
    ) throws -> (status: Int32, out: String, err: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: ProcessTests.binary)
        process.arguments = ["serve", "--port", "0", "--tls", "off", "--quiet"] + arguments
        var env = ProcessInfo.processInfo.environment
        for name in ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "BACKLOT_TEST_STOP_AT"] {
            env.removeValue(forKey: name)
        }
        for (k, v) in environment { env[k] = v }
        process.environment = env
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        var text = ""
        if let marker {
            do {
                text = try Wait.output(of: output.fileHandleForReading, "backlot serve prints \"\(marker)\"") {
                    $0.contains(marker)
                }
            } catch {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
                throw error
            }
            if process.isRunning { kill(process.processIdentifier, SIGTERM) }
        }
        try Wait.untilExit(
            of: process, marker == nil ? "backlot serve ends by itself" : "backlot serve stops on SIGTERM",
            timeout: .seconds(120))
        text += String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        return (
            process.terminationStatus, text,
            String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        )
    }

    func keys(_ credentials: S3Credentials) -> [String: String] {
        ["AWS_ACCESS_KEY_ID": credentials.accessKeyID, "AWS_SECRET_ACCESS_KEY": credentials.secretAccessKey]
    }

    @Test func theTreeGoesToTheBucketUnderItsPrefix() throws {
        let store = try ObjectStore.shared()
        let (s3, bucket) = try store.newBucket("serve")
        let dir = try TemporaryDirectory("serve-s3")
        defer { dir.remove() }
        let r = try serve(
            [
                "--data", dir.at("data"), "--storage", "s3://\(bucket)/edge/", "--s3-endpoint", store.endpoint,
                "--s3-path-style",
            ],
            environment: keys(store.credentials), until: "Metrics:")
        #expect(r.out.contains("Published tree: s3://\(bucket)/edge at \(store.endpoint)"), "\(r.out) \(r.err)")
        let keyList = try #require(try s3.headObject(bucket: bucket, key: "edge/v1/keys/root.json"))
        #expect(keyList.cacheControl == "public, max-age=300" && keyList.contentType == "application/json")
        #expect(
            try s3.listAllObjects(bucket: bucket).map(\.key).sorted() == [
                "edge/v1/keys/root-1.json", "edge/v1/keys/root.json",
            ])
        #expect(r.out.contains("Stopped."), "\(r.out)")
    }

    @Test func wrongCredentialsStopTheStartNamingEndpointAndBucket() throws {
        let store = try ObjectStore.shared()
        let (_, bucket) = try store.newBucket("creds")
        let dir = try TemporaryDirectory("serve-creds")
        defer { dir.remove() }
        for wrong in [
            S3Credentials(accessKeyID: store.credentials.accessKeyID, secretAccessKey: "not-the-secret"),
            S3Credentials(accessKeyID: "NOSUCHKEY0000000000", secretAccessKey: store.credentials.secretAccessKey),
        ] {
            let r = try serve(
                [
                    "--data", dir.at("data"), "--storage", "s3://\(bucket)", "--s3-endpoint", store.endpoint,
                    "--s3-path-style",
                ],
                environment: keys(wrong))
            #expect(r.status != 0)
            #expect(
                r.err.contains("the published tree's bucket \(bucket) at \(store.endpoint) cannot be used"), "\(r.err)")
            #expect(r.err.contains("the credentials are wrong for this endpoint"), "\(r.err)")
            #expect(r.err.contains(wrong.accessKeyID), "the hint names the key ID: \(r.err)")
            #expect(!r.err.contains(wrong.secretAccessKey), "never the secret: \(r.err)")
            #expect(!r.out.contains("Serving"), "\(r.out)")
            #expect(!FileSystem.exists(dir.at("data")), "the bucket is checked before the data folder is made")
        }
    }

    @Test func aMissingBucketStopsTheStartNamingEndpointAndBucket() throws {
        let store = try ObjectStore.shared()
        let dir = try TemporaryDirectory("serve-nobucket")
        defer { dir.remove() }
        let bucket = "t-missing-\(getpid())"
        let r = try serve(
            [
                "--data", dir.at("data"), "--storage", "s3://\(bucket)/p", "--s3-endpoint", store.endpoint,
                "--s3-path-style",
            ],
            environment: keys(store.credentials))
        #expect(r.status != 0)
        #expect(r.err.contains("the bucket \(bucket) does not exist at \(store.endpoint)"), "\(r.err)")
        #expect(!r.out.contains("Serving"), "\(r.out)")
        #expect(!FileSystem.exists(dir.at("data")), "the bucket is checked before the data folder is made")
    }

    @Test func aSigningKeyOthersMayReadOrThatIsNotTheFoldersKeyIsRefused() throws {
        let dir = try TemporaryDirectory("serve-key")
        defer { dir.remove() }
        _ = try RepositoryDirectory(path: dir.at("seed"))
        let open = try dir.write("open.key", try dir.read("seed/keys/signing.key"), mode: 0o644)
        func serve(_ key: String, data: String) -> (status: Int32, err: String) {
            let io = CapturedIO()
            let status = BacklotCLI.main(
                ["serve", "--data", data, "--port", "0", "--tls", "off", "--signing-key", key], io: io)
            return (status, io.standardError)
        }
        let refused = serve(open, data: dir.at("a"))
        #expect(
            refused.status == 2 && refused.err.contains("the signing key is open to others (mode 644)")
                && refused.err.contains("chmod 600"), "\(refused)")
        let missing = serve(dir.at("nope.key"), data: dir.at("a"))
        #expect(missing.status == 2 && missing.err.contains("there is no signing key file"), "\(missing)")
        // A folder made with its own key refuses another one.
        _ = try RepositoryDirectory(path: dir.at("other"))
        let key = try dir.write("shared.key", try dir.read("seed/keys/signing.key"), mode: 0o600)
        let foreign = serve(key, data: dir.at("other"))
        #expect(foreign.status == 2 && foreign.err.contains("is not the signing key of the data folder"), "\(foreign)")
    }

    @Test func badStorageOptionsAreUsageErrorsBeforeAnythingStarts() throws {
        let dir = try TemporaryDirectory("serve-usage")
        defer { dir.remove() }
        for (args, message) in [
            (["--storage", "http://bucket"], "--storage takes s3://BUCKET[/PREFIX]"),
            (["--storage", "s3://Bad_Bucket"], "is not a bucket name"),
            (["--storage", "s3://bucket/a/../b"], "has an empty, . or .. component"),
            (["--storage", "s3://bucket"], "needs --s3-endpoint URL"),
            (["--s3-endpoint", "http://127.0.0.1:9"], "--s3-endpoint needs --storage"),
        ] {
            let io = CapturedIO()
            let status = BacklotCLI.main(
                ["serve", "--data", dir.at("data"), "--port", "0", "--tls", "off"] + args, io: io)
            #expect(status != 0, "\(args)")
            #expect(io.standardError.contains(message), "\(args): \(io.standardError)")
        }
        #expect(!FileSystem.exists(dir.at("data")), "nothing was made before the options were checked")
    }
}
