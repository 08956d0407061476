import BacklotRepository

extension Uploads {
    /// Creates a version of `pack` for `bytes` (an archive), uploads them in one piece and waits
    /// for processing: the upload → processing step every publishing test goes through.
    /// - Returns: the version as processing left it (COMPLETE, or FAILED with its reason).
    @discardableResult
    public func uploadAndProcess(app: String, pack: String, bytes: [UInt8]) throws -> VersionInfo {
        let v = try createVersion(app: app, pack: pack, size: UInt64(bytes.count))
        let upload = try beginUpload(app: app, pack: pack, number: v.number, offset: 0)
        try bytes.withUnsafeBytes { try upload.append($0) }
        try upload.close()
        waitForProcessing()
        return try version(app: app, pack: pack, number: v.number)
    }
}
