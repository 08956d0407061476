import BacklotBasics
import BacklotProtocol

/// An app as `--json` prints it (docs/json.md): `{"app","created","fourEyes","quotaBytes","secondReviewerAbove"}`
/// (the API's `id` is `app` here, as in every other command).
struct AppOutput: Encodable {
    let app: String
    let created: String
    let fourEyes: Bool
    let quotaBytes: UInt64
    @NullWhenAbsent var secondReviewerAbove: Double?

    init(_ a: API.App) {
        secondReviewerAbove = a.secondReviewerAbove
        app = a.id
        created = a.created
        fourEyes = a.fourEyes
        quotaBytes = a.quotaBytes
    }

    /// The `--json` of `apps list`.
    struct List: Encodable {
        let apps: [AppOutput]
    }
}
