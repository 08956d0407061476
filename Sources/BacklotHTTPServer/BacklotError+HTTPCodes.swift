import BacklotBasics

/// The codes of the errors the HTTP layer answers by itself, before any of Backlot's own
/// operations could fail: the `code` of `{"error": {"code", …}}` (docs/protocol.md, "Errors").
/// Like every ``BacklotError/Code`` they are stable names that clients match on.
///
/// ```swift
/// return .error(405, code: .methodNotAllowed, "use GET or HEAD")
/// ```
extension BacklotError.Code {
    /// The request's path is not one this server could ever answer (not a valid path of the tree).
    public static let badPath = BacklotError.Code("badPath", isInvalidInput: true)
    /// The request is malformed: a query, a header or a body the route cannot read.
    public static let badRequest = BacklotError.Code("badRequest", isInvalidInput: true)
    /// A body field the route does not know (a misspelling would otherwise be ignored).
    public static let unknownField = BacklotError.Code("unknownField", isInvalidInput: true)
    /// The route does not take this method.
    public static let methodNotAllowed = BacklotError.Code("methodNotAllowed", isInvalidInput: true)
    /// The body is not of a media type the route reads.
    public static let unsupportedMediaType = BacklotError.Code("unsupportedMediaType", isInvalidInput: true)
    /// The body is larger than the route accepts.
    public static let tooLarge = BacklotError.Code("tooLarge", isInvalidInput: true)
    /// `If-Match` or `If-Unmodified-Since` does not hold for the file as it is.
    public static let preconditionFailed = BacklotError.Code("preconditionFailed", isInvalidInput: true)
    /// The `Range` lies outside the file.
    public static let rangeNotSatisfiable = BacklotError.Code("rangeNotSatisfiable", isInvalidInput: true)
    /// Plain HTTP sent to the HTTPS port.
    public static let plainHTTPToHTTPSPort = BacklotError.Code("plainHTTPToHTTPSPort", isInvalidInput: true)
    /// The server sheds load: it answers as many transfers as it can (503 with `Retry-After`).
    public static let busy = BacklotError.Code("busy", isInvalidInput: false)
    /// The server failed; its log has the details (500).
    public static let `internal` = BacklotError.Code("internal", isInvalidInput: false)
}
