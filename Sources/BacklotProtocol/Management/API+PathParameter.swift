extension API {
    /// The `{name}` parameters of the endpoints' path templates (`/api/apps/{app}/packs`): the
    /// one spelling of each, for the CLI that fills them (``EndpointDescription/path(_:)``) and
    /// the server that reads them back (``EndpointDescription/match(_:)``). Every template names
    /// only these (checked by `EndpointTableTests`).
    ///
    /// ```swift
    /// let path = API.listVersions.path([.app: "com.example.game", .pack: "Levels"])
    /// ```
    public enum PathParameter: String, Sendable, Hashable, CaseIterable {
        /// An app's ID.
        case app
        /// A pack's ID within its app.
        case pack
        /// A version's number (a whole number from 1).
        case version
        /// A release channel's name.
        case channel
        /// A release request's or a token's number.
        case id
    }
}
