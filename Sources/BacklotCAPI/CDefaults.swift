import CBacklot

/// The values the _init functions of the header's structs set, and what members a caller built
/// against an older header did not give keep.
enum CDefaults {
    static var config: backlot_config {
        backlot_config(
            size: MemoryLayout<backlot_config>.size, container_path: nil, catalog_url: nil, trusted_key_path: nil,
            ca_path: nil, app: nil, channel: nil, bandwidth_limit: 0, stall_timeout: 0, retries: -1, no_reports: 0,
            device_profile: nil, peers: nil, discover_peers: 0)
    }

    static var packInfo: backlot_pack_info {
        backlot_pack_info(size: MemoryLayout<backlot_pack_info>.size, id: nil, version: 0, download_size: 0, status: 0)
    }

    static var urlDownload: backlot_url_download {
        backlot_url_download(
            size: MemoryLayout<backlot_url_download>.size, identifier: nil, url: nil, file_size: -1, essential: 0,
            priority: 0)
    }

    static var downloadDelegate: backlot_download_delegate {
        backlot_download_delegate(
            size: MemoryLayout<backlot_download_delegate>.size, began: nil, paused: nil, wrote: nil, failed: nil,
            finished: nil)
    }

    /// Where the last member of each struct ends: what follows is tail padding
    /// (``CMemory/initialise(_:size:with:end:)`` writes it as zeros).
    static let configEnd =
        MemoryLayout<backlot_config>.offset(of: \backlot_config.discover_peers)! + MemoryLayout<Int32>.size
    static let packInfoEnd =
        MemoryLayout<backlot_pack_info>.offset(of: \backlot_pack_info.status)! + MemoryLayout<UInt32>.size

    /// The size of each struct in the first release of the interface (ABI version 1): a caller
    /// passing less did not initialise it.
    static let firstConfigSize = MemoryLayout<backlot_config>.offset(of: \backlot_config.no_reports)!
    /// The sizes a caller's `backlot_config` may have: the first release's, or one ending where a
    /// later member ends (or where the padding before the next pointer does), so that no member
    /// is given in part (half a pointer, read as a whole one, would point anywhere).
    static let configSizes: [Int] = {
        func end<V>(_ member: KeyPath<backlot_config, V>) -> Int {
            MemoryLayout<backlot_config>.offset(of: member)! + MemoryLayout<V>.size
        }
        return [
            firstConfigSize, end(\.no_reports), MemoryLayout<backlot_config>.offset(of: \.device_profile)!,
            end(\.device_profile), end(\.peers), end(\.discover_peers), MemoryLayout<backlot_config>.size,
        ]
    }()
    static let firstURLDownloadSize = MemoryLayout<backlot_url_download>.size
    static let firstDelegateSize = MemoryLayout<backlot_download_delegate>.size
    static let firstPackInfoSize = MemoryLayout<backlot_pack_info>.size
}
