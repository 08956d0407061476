#if canImport(Glibc)
import Glibc
#endif

/// The machine's IPv4 addresses, by interface (getifaddrs(3)): what a service bound to "the
/// LAN" chooses among.
///
/// ```swift
/// for a in NetworkInterfaces.ipv4Addresses() where a.isUp && a.isPrivate { print(a.interface, a.address) }
/// ```
public enum NetworkInterfaces {
    public struct Address: Sendable, Hashable {
        /// The interface's name (`eth0`).
        public let interface: String
        /// Dotted decimal (`192.168.1.20`).
        public let address: String
        public let isUp: Bool
        public let isLoopback: Bool

        public init(interface: String, address: String, isUp: Bool, isLoopback: Bool) {
            self.interface = interface
            self.address = address
            self.isUp = isUp
            self.isLoopback = isLoopback
        }

        /// In 10/8, 172.16/12, 192.168/16 or 169.254/16: never routed on the internet.
        public var isPrivate: Bool { NetworkInterfaces.isPrivate(ipv4: address) }
    }

    /// Whether dotted-decimal `address` is in 10/8, 172.16/12, 192.168/16 or 169.254/16 (never
    /// routed on the internet): what a service of the LAN listens on, and what it may be told of.
    public static func isPrivate(ipv4 address: String) -> Bool {
        let parts = address.split(separator: ".", omittingEmptySubsequences: false)
        let o = parts.compactMap { UInt8($0) }
        guard parts.count == 4, o.count == 4 else { return false }
        return o[0] == 10 || (o[0] == 172 && (16...31).contains(o[1])) || (o[0] == 192 && o[1] == 168)
            || (o[0] == 169 && o[1] == 254)
    }

    /// Whether IPv6 `address` (text, no zone) is link-local (fe80::/10) or unique-local (fc00::/7):
    /// the IPv6 addresses of a LAN, never routed on the internet.
    public static func isPrivate(ipv6 address: String) -> Bool {
        guard let first = address.split(separator: ":", omittingEmptySubsequences: false).first,
            (1...4).contains(first.count), let group = UInt16(first, radix: 16)
        else { return false }
        return group & 0xFFC0 == 0xFE80 || group & 0xFE00 == 0xFC00
    }

    /// Every IPv4 address of every interface (none when getifaddrs fails).
    public static func ipv4Addresses() -> [Address] {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return [] }
        defer { freeifaddrs(list) }
        var found: [Address] = []
        var next: UnsafeMutablePointer<ifaddrs>? = first
        while let entry = next {
            defer { next = entry.pointee.ifa_next }
            guard let sa = entry.pointee.ifa_addr, sa.pointee.sa_family == sa_family_t(AF_INET),
                let name = entry.pointee.ifa_name
            else { continue }
            var text = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
            let ok = sa.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { sin in
                var a = sin.pointee.sin_addr
                return inet_ntop(AF_INET, &a, &text, socklen_t(text.count)) != nil
            }
            guard ok else { continue }
            let flags = entry.pointee.ifa_flags
            found.append(
                Address(
                    interface: String(cString: name), address: String(cString: text),
                    isUp: flags & UInt32(IFF_UP) != 0, isLoopback: flags & UInt32(IFF_LOOPBACK) != 0))
        }
        return found
    }
}
