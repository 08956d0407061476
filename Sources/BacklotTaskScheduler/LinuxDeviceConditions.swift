import BacklotBasics
import Foundation

/// Reads ``DeviceConditions`` from Linux:
///
/// - network: an interface other than `lo` whose `/sys/class/net/IF/operstate` is `up` (or
///   `unknown`, as some tunnels report), and a default route in `/proc/net/route` or
///   `/proc/net/ipv6_route`;
/// - metered: NetworkManager's `GENERAL.METERED` property of the default route's device
///   (`nmcli -g GENERAL.METERED device show IF`: `yes`, `yes (guessed)`…), where `nmcli` exists;
///   else ``meteredFallback`` (from configuration);
/// - power: `/sys/class/power_supply/*`: on external power when a `Mains` or `USB` supply is
///   `online`, or when there is no battery; the battery is low below ``lowBatteryPercent`` while
///   discharging.
///
/// The roots are parameters so that tests read prepared folders instead of the machine's.
///
/// ```swift
/// let now = LinuxDeviceConditions().current()
/// if now.networkAvailable && !now.networkMetered { … }
/// ```
public struct LinuxDeviceConditions: DeviceConditionSource {
    public var sysRoot: String
    public var procRoot: String
    /// Whether the network counts as metered when NetworkManager cannot say.
    public var meteredFallback: Bool
    /// Below this charge (percent), a discharging battery is low.
    public var lowBatteryPercent: Int
    /// The `nmcli` to ask (nil: do not ask NetworkManager).
    public var nmcli: String?
    /// How long `nmcli` may take before it is killed and its answer ignored.
    public var commandTimeout: Duration = .seconds(2)

    public init(
        sysRoot: String = "/sys", procRoot: String = "/proc", meteredFallback: Bool = false,
        lowBatteryPercent: Int = 20,
        nmcli: String? = LinuxDeviceConditions.findNmcli()
    ) {
        self.sysRoot = sysRoot
        self.procRoot = procRoot
        self.meteredFallback = meteredFallback
        self.lowBatteryPercent = lowBatteryPercent
        self.nmcli = nmcli
    }

    public static func findNmcli() -> String? {
        ["/usr/bin/nmcli", "/bin/nmcli", "/usr/local/bin/nmcli"].first {
            FileManager.default.isExecutableFile(atPath: $0)
        }
    }

    /// Reading the conditions may run `nmcli`: a reading is reused for a second.
    public var readingLifetime: Duration { .seconds(1) }

    public func current() -> DeviceConditions {
        let route = defaultRouteInterface()
        let up = interfacesUp()
        let network = route != nil && (up.contains(route!) || route == "*")
        var metered = meteredFallback
        if network, let nmcli, let iface = route,
            let answer = Self.run(nmcli, ["-g", "GENERAL.METERED", "device", "show", iface], timeout: commandTimeout)
        {
            let value = answer.trimmingCharacters(in: .whitespacesAndNewlines).lowercased()
            if value.hasPrefix("yes") { metered = true } else if value.hasPrefix("no") { metered = false }
        }
        let (external, low) = power()
        return DeviceConditions(
            networkAvailable: network, networkMetered: metered, onExternalPower: external, batteryLow: low)
    }

    func read(_ path: String) -> String? {
        (try? String(contentsOfFile: path, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Interfaces other than loopback that are up.
    func interfacesUp() -> Set<String> {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: sysRoot + "/class/net")) ?? []
        return Set(
            names.filter { name in
                name != "lo" && ["up", "unknown"].contains(read(sysRoot + "/class/net/\(name)/operstate") ?? "down")
            })
    }

    /// The interface of the default route (IPv4 first, then IPv6), if there is one.
    func defaultRouteInterface() -> String? {
        if let table = read(procRoot + "/net/route") {
            // Iface Destination Gateway Flags …; destination 00000000 with the UP flag (0x1).
            for line in table.split(separator: "\n").dropFirst() {
                let f = line.split(whereSeparator: { $0 == "\t" || $0 == " " })
                if f.count > 3, f[1] == "00000000", let flags = Int(f[3], radix: 16), flags & 1 != 0 {
                    return String(f[0])
                }
            }
        }
        if let table = read(procRoot + "/net/ipv6_route") {
            // dest prefixlen src srclen next metric refcnt use flags iface; ::/0 not through lo.
            for line in table.split(separator: "\n") {
                let f = line.split(separator: " ", omittingEmptySubsequences: true)
                if f.count >= 10, f[0] == "00000000000000000000000000000000", f[1] == "00", f[9] != "lo" {
                    return String(f[9])
                }
            }
        }
        return nil
    }

    /// (on external power, battery low).
    func power() -> (Bool, Bool) {
        let base = sysRoot + "/class/power_supply"
        let names = (try? FileManager.default.contentsOfDirectory(atPath: base)) ?? []
        var mainsOnline = false
        var batteries = 0
        var discharging = false
        var lowest = 100
        for name in names {
            let type = read("\(base)/\(name)/type") ?? ""
            switch type {
            case "Mains", "USB":
                if read("\(base)/\(name)/online") == "1" { mainsOnline = true }
            case "Battery":
                batteries += 1
                if read("\(base)/\(name)/status") == "Discharging" { discharging = true }
                if let c = read("\(base)/\(name)/capacity").flatMap(Int.init) { lowest = min(lowest, c) }
            default:
                break
            }
        }
        let external = mainsOnline || batteries == 0 || !discharging
        return (external, !external && lowest < lowBatteryPercent)
    }

    /// Runs a command and returns its output (the last 4 KiB at most), or nil when it fails or
    /// takes more than `timeout` (its process group is then killed), through ``ChildProcess``.
    static func run(_ path: String, _ arguments: [String], timeout: Duration) -> String? {
        // Its standard error is dropped (the shell sends it to /dev/null): only its answer is read.
        guard
            let outcome = try? ChildProcess.run(
                executable: "/bin/sh", arguments: ["-c", "exec \"$0\" \"$@\" 2>/dev/null", path] + arguments,
                environment: ProcessInfo.processInfo.environment, until: .now + timeout, keepingLast: 4096)
        else { return nil }
        return outcome.succeeded ? String(decoding: outcome.output, as: UTF8.self) : nil
    }
}
