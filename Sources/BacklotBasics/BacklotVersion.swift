/// Backlot's version: what `backlot --version`, the server's metrics and `backlot_version()` of
/// libbacklot say, and what `make deb` names the package with.
public enum BacklotVersion {
    /// The release, as semantic versioning writes it.
    public static let current = "0.1.0"

    /// How this binary was compiled, `release` or `debug`: what `backlot --version` adds, so that a
    /// benchmark prints the build it measured rather than assuming one.
    public static var buildConfiguration: String {
        #if DEBUG
        "debug"
        #else
        "release"
        #endif
    }
}
