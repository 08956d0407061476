import BacklotBasics
import BacklotS3

extension S3PublishedTree {
    /// Splits `s3://BUCKET[/PREFIX]` (what `backlot serve --storage` takes) into the bucket and the key prefix.
    /// - Throws: ``BacklotError/Code/usage`` for anything else (another scheme, no bucket, a bad prefix).
    public static func parseStorage(_ text: String) throws -> (bucket: String, prefix: String) {
        let hint = "give --storage s3://BUCKET or s3://BUCKET/PREFIX"
        guard text.hasPrefix("s3://") else {
            throw BacklotError(
                .usage, "--storage takes s3://BUCKET[/PREFIX] (got '\(text)')", context: "backlot serve", hint: hint)
        }
        let rest = text.dropFirst(5)
        let bucket = String(rest.prefix(while: { $0 != "/" }))
        let prefix = String(rest.dropFirst(bucket.count).drop(while: { $0 == "/" }))
        guard (3...63).contains(bucket.utf8.count),
            bucket.allSatisfy({ ($0.isASCII && ($0.isLowercase || $0.isNumber)) || $0 == "-" || $0 == "." })
        else {
            throw BacklotError(
                .usage,
                "'\(bucket)' in --storage \(text) is not a bucket name (3 to 63 lowercase letters, digits, dots and hyphens)",
                context: "backlot serve", hint: hint)
        }
        let trimmed = String(prefix.reversed().drop(while: { $0 == "/" }).reversed())
        if !trimmed.isEmpty,
            trimmed.split(separator: "/", omittingEmptySubsequences: false).contains(where: {
                $0.isEmpty || $0 == "." || $0 == ".."
            })
        {
            throw BacklotError(
                .usage, "the prefix '\(prefix)' in --storage \(text) has an empty, . or .. component",
                context: "backlot serve", hint: hint)
        }
        return (bucket, trimmed)
    }

    /// Connects to the tree at `s3://BUCKET[/PREFIX]` on `endpoint` and checks, before anything is
    /// written, that the bucket exists and that the credentials may use it (one HEAD of the bucket).
    ///
    /// ```swift
    /// let tree = try S3PublishedTree.connect(storage: "s3://backlot/public", endpoint: "https://s3.example.net",
    ///                                        credentials: try S3Credentials.fromEnvironment())
    /// ```
    /// - Throws: ``BacklotError/Code/usage`` for a bad `storage` or endpoint; ``BacklotError/Code/notFound``
    ///   when the bucket does not exist, ``BacklotError/Code/forbidden`` for wrong credentials — each
    ///   message naming the endpoint and the bucket; the transport's errors when the endpoint cannot be reached.
    public static func connect(
        storage: String, endpoint: String, region: String = "us-east-1", pathStyle: Bool = false,
        credentials: S3Credentials, headers: PublishedTreeHeaders = PublishedTreeHeaders()
    ) throws -> S3PublishedTree {
        let (bucket, prefix) = try parseStorage(storage)
        let configuration = try S3Configuration(endpoint: endpoint, region: region, pathStyle: pathStyle)
        let client = S3Client(configuration: configuration, credentials: credentials)
        let exists: Bool
        do {
            do {
                exists = try client.bucketExists(bucket)
            } catch let denied as BacklotError where denied.code == .forbidden {
                // A HEAD answer has no body to say why: a listing of one key does (wrong secret, unknown key, or denied).
                _ = try client.listObjects(bucket: bucket, maximumKeys: 1)
                throw denied
            }
        } catch let error as BacklotError {
            throw BacklotError(
                error.code,
                "the published tree's bucket \(bucket) at \(configuration.endpoint) cannot be used: \(error.message)",
                context: storage, hint: error.hint)
        }
        guard exists else {
            throw BacklotError(
                .notFound, "the bucket \(bucket) does not exist at \(configuration.endpoint)", context: storage,
                hint: "create it first (for example s3cmd mb s3://\(bucket)), or check --storage and --s3-endpoint")
        }
        return try S3PublishedTree(client: client, bucket: bucket, prefix: prefix, headers: headers)
    }
}
