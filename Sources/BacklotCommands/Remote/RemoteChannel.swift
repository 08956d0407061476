/// A channel's catalog as `GET /api/apps/{app}/channels/{channel}` answers it and as `catalog show
/// --json` prints it (the same keys): `{"app","channel","catalogVersion","expires","signingKey","packs"}`.
struct RemoteChannel: Codable {
    /// A pack on the channel: the version live for every device, and the candidate being rolled out.
    struct Pack: Codable {
        struct Live: Codable {
            let version: Int
            @NullWhenAbsent var archiveSHA256: String? = nil
        }
        struct Candidate: Codable {
            let version: Int
            @NullWhenAbsent var rolloutPercent: Double? = nil
        }
        let pack: String
        @NullWhenAbsent var live: Live? = nil
        @NullWhenAbsent var candidate: Candidate? = nil
    }

    var app: String
    var channel: String
    @NullWhenAbsent var catalogVersion: Int? = nil
    @NullWhenAbsent var expires: String? = nil
    @NullWhenAbsent var signingKey: String? = nil
    let packs: [Pack]
}
