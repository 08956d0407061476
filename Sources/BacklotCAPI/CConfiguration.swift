import BacklotBasics
import BacklotClient
import BacklotFormat
import BacklotProtocol
import CBacklot
import Foundation

/// A C `backlot_config` as the client's configuration, every member checked.
enum CConfiguration {
    /// - Throws: ``CallError`` (invalid argument) for NULL, an uninitialised struct, a required
    ///   member missing or a number out of range; ``BacklotError/Code/usage`` for a catalog URL of
    ///   the wrong shape or an `app`/`channel` that is not the URL's; what reading the key file throws.
    static func read(_ pointer: UnsafePointer<backlot_config>?) throws -> AssetPackManager.Configuration {
        let c = try CMemory.sized(
            pointer, "config", defaults: CDefaults.config, releaseSizes: CDefaults.configSizes)
        let container = try CMemory.string(c.container_path, "config->container_path")
        guard !container.isEmpty else { throw CallError.invalidArgument("config->container_path is empty") }
        let urlText = try CMemory.string(c.catalog_url, "config->catalog_url")
        let keyFile = try CMemory.string(c.trusted_key_path, "config->trusted_key_path")
        let caFile = try CMemory.optionalString(c.ca_path, "config->ca_path")
        guard let url = URL(string: urlText) else {
            throw BacklotError(
                .usage, "config->catalog_url is not a URL", context: urlText,
                hint: "give the channel's catalog: https://HOST/\(PublishedTreeLayout.catalogTemplate)")
        }
        var configuration = try AssetPackManager.Configuration(
            containerPath: container, catalogURL: url, trustedKeyFile: keyFile, caFile: caFile)
        if let app = try CMemory.optionalString(c.app, "config->app"), app != configuration.app {
            throw BacklotError(
                .usage, "config->app is \(app), but the catalog URL is for \(configuration.app)", context: urlText,
                hint: "leave config->app NULL, or give the catalog URL of \(app)")
        }
        if let channel = try CMemory.optionalString(c.channel, "config->channel"),
            channel != configuration.channel.rawValue
        {
            throw BacklotError(
                .usage, "config->channel is \(channel), but the catalog URL is for \(configuration.channel.rawValue)",
                context: urlText, hint: "leave config->channel NULL, or give that channel's catalog URL")
        }
        guard let limit = Int(exactly: c.bandwidth_limit) else {
            throw CallError.invalidArgument("config->bandwidth_limit \(c.bandwidth_limit) is too large")
        }
        configuration.bandwidthLimit = limit
        if c.stall_timeout != 0 { configuration.stallTimeout = Int(c.stall_timeout) }
        switch c.retries {
        case -1: break
        case 0...1000: configuration.retries = Int(c.retries)
        default:
            throw CallError.invalidArgument("config->retries is \(c.retries): give 0…1000, or -1 for the default (4)")
        }
        switch c.no_reports {
        case 0: break
        case 1: configuration.sendsReports = false
        default: throw CallError.invalidArgument("config->no_reports is \(c.no_reports): give 0 or 1")
        }
        if let profile = try CMemory.optionalString(c.device_profile, "config->device_profile") {
            configuration.deviceProfile = try DeviceProfile.detected(
                overriddenBy: profile, label: "config->device_profile", context: urlText)
        }
        if let list = try CMemory.optionalString(c.peers, "config->peers") {
            let urls = list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            guard urls.count <= PeerDirectory.maximumPeers else {
                throw CallError.invalidArgument(
                    "config->peers names \(urls.count) peers: give at most \(PeerDirectory.maximumPeers)")
            }
            configuration.peers.staticPeers = try urls.map { text in
                guard let url = PeerDirectory.peerURL(text) else {
                    throw CallError.invalidArgument(
                        "config->peers: \"\(text.prefix(80))\" is not http://HOST:PORT (give a comma-separated list)")
                }
                return url
            }
        }
        switch c.discover_peers {
        case 0: break
        case 1: configuration.peers.discovers = true
        default: throw CallError.invalidArgument("config->discover_peers is \(c.discover_peers): give 0 or 1")
        }
        return configuration
    }
}
