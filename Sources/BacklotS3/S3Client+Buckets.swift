import BacklotBasics

extension S3Client {
    /// Creates a bucket (CreateBucket); one this account owns already is left as it is.
    /// Outside `us-east-1` the region is sent as the location constraint.
    /// - Throws: ``BacklotError/Code/conflict`` when another account owns the name; ``BacklotError/Code/invalidInput``
    ///   for a name S3 refuses (3 to 63 characters: lowercase letters, digits, dots, hyphens).
    public func createBucket(_ bucket: String) throws {
        guard (3...63).contains(bucket.utf8.count) else {
            throw BacklotError(
                .invalidInput, "the bucket name '\(bucket)' must have 3 to 63 characters",
                hint: "lowercase letters, digits, dots and hyphens")
        }
        var request = S3Request(operation: "CREATE bucket", method: "PUT", bucket: bucket, key: nil, body: .bytes([]))
        if configuration.region != "us-east-1" {
            request.body = .bytes(
                Array(
                    "<CreateBucketConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><LocationConstraint>\(Self.xmlEscaped(configuration.region))</LocationConstraint></CreateBucketConfiguration>"
                        .utf8))
        }
        do {
            _ = try perform(request, bodyLimit: 1 << 20)
        } catch let e as BacklotError where e.message.contains("BucketAlreadyOwnedByYou") {
            return
        }
    }

    /// Whether the bucket exists (HeadBucket).
    /// - Throws: ``BacklotError/Code/forbidden`` when it exists but this key may not use it (or the credentials are wrong).
    public func bucketExists(_ bucket: String) throws -> Bool {
        do {
            _ = try perform(S3Request(operation: "HEAD bucket", method: "HEAD", bucket: bucket, key: nil), bodyLimit: 0)
            return true
        } catch let e as BacklotError where e.code == .notFound {
            return false
        }
    }

    /// Deletes an empty bucket (DeleteBucket).
    public func deleteBucket(_ bucket: String) throws {
        _ = try perform(
            S3Request(operation: "DELETE bucket", method: "DELETE", bucket: bucket, key: nil), bodyLimit: 1 << 20)
    }

    /// `text` with `& < > " '` as entities.
    static func xmlEscaped(_ text: String) -> String {
        var out = ""
        for c in text {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&apos;"
            default: out.append(c)
            }
        }
        return out
    }
}
