import BacklotProtocol
import BacklotRepository
import Foundation
import Testing

@testable import BacklotServer

/// What `contrib/` gives operators works with this server: the Prometheus alert rules pass
/// `promtool check rules` and their unit tests (`promtool test rules`: each alert fires on the
/// series that should raise it and not on the others), and the Grafana dashboard loads and, like
/// the rules, names only metric families the server exposes.
@Suite struct ContribTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let rules = root.appendingPathComponent("contrib/prometheus").path

    /// Runs promtool in `folder`; the test fails (never skips) when Debian's prometheus package,
    /// which has it, is not installed.
    func promtool(_ arguments: [String]) throws -> (status: Int32, output: String) {
        let path = "/usr/bin/promtool"
        try #require(
            FileManager.default.isExecutableFile(atPath: path),
            "promtool is missing: install Debian's prometheus package (scripts/bootstrap does)")
        let p = Process()
        p.executableURL = URL(fileURLWithPath: path)
        p.arguments = arguments
        p.currentDirectoryURL = URL(fileURLWithPath: Self.rules)
        let pipe = Pipe()
        p.standardOutput = pipe
        p.standardError = pipe
        try p.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        return (p.terminationStatus, output)
    }

    /// The metric families the server declares (`# TYPE name`), with a histogram's series names.
    static func families() -> Set<String> {
        let text = ServerMetrics(version: "test").prometheusText()
        var names: Set<String> = []
        for line in text.split(separator: "\n") where line.hasPrefix("# TYPE ") {
            let parts = line.split(separator: " ")
            guard parts.count == 4 else { continue }
            let name = String(parts[2])
            names.insert(name)
            if parts[3] == "histogram" { for suffix in ["_bucket", "_sum", "_count"] { names.insert(name + suffix) } }
        }
        return names
    }

    static func metricNames(in text: String) -> Set<String> {
        Set(text.matches(of: /backlot_[a-z_]+/).map { String($0.output) })
    }

    @Test func theAlertRulesPassPromtoolAndTheirUnitTests() throws {
        let check = try promtool(["check", "rules", "backlot-rules.yml"])
        #expect(check.status == 0 && check.output.contains("SUCCESS: 6 rules found"), "\(check.output)")
        let test = try promtool(["test", "rules", "backlot-rules.test.yml"])
        #expect(test.status == 0 && test.output.contains("SUCCESS"), "\(test.output)")
        let rules = try String(contentsOfFile: Self.rules + "/backlot-rules.yml", encoding: .utf8)
        let unknown = Self.metricNames(in: rules).subtracting(Self.families())
        #expect(unknown.isEmpty, "the rules name metrics the server does not expose: \(unknown.sorted())")
    }

    struct Dashboard: Decodable {
        struct Panel: Decodable {
            struct Target: Decodable {
                let expr: String
                let refId: String
            }
            let id: Int
            let type: String
            let title: String
            let targets: [Target]
        }
        let title: String
        let uid: String
        let panels: [Panel]
    }

    @Test func theGrafanaDashboardLoadsAndShowsOnlyWhatTheServerExposes() throws {
        let data = try Data(contentsOf: Self.root.appendingPathComponent("contrib/grafana/backlot.json"))
        let dashboard = try JSONDecoder().decode(Dashboard.self, from: data)
        #expect(dashboard.uid == "backlot" && !dashboard.panels.isEmpty)
        #expect(Set(dashboard.panels.map(\.id)).count == dashboard.panels.count, "panel ids are unique")
        let expressions = dashboard.panels.flatMap(\.targets).map(\.expr)
        #expect(expressions.allSatisfy { !$0.isEmpty })
        let named = expressions.reduce(into: Set<String>()) { $0.formUnion(Self.metricNames(in: $1)) }
        let unknown = named.subtracting(Self.families())
        #expect(unknown.isEmpty, "the dashboard names metrics the server does not expose: \(unknown.sorted())")
        // The adoption and install figures (issue #31) are on it.
        for family in ["backlot_adoption_devices", "backlot_device_installs_total", "backlot_rollout_percent"] {
            #expect(named.contains(family), "the dashboard shows no \(family)")
        }
    }

    @Test func theExpositionShowsDevicesAndRolesButNoFigureBelowTheThreshold() {
        var gauges = ServerMetrics.Gauges()
        gauges.releases = [
            (
                "com.example.game",
                AdoptionReport.Row(
                    date: "2026-12-04", channel: .production, pack: "Levels", version: 2, devices: 12, started: 30,
                    finished: 29, failed: nil)
            ),
            (
                "com.example.game",
                AdoptionReport.Row(
                    date: "2026-12-04", channel: .production, pack: "Levels", version: 3, devices: nil, started: nil,
                    finished: nil, failed: nil)
            ),
        ]
        gauges.productionPacks = [(app: "com.example.game", pack: "Levels", live: 2, candidate: 3, basisPoints: 1250)]
        let text = ServerMetrics(version: "test").prometheusText(gauges)
        let labels = #"app="com.example.game",channel="production",pack="Levels",version="2""#
        #expect(text.contains("backlot_adoption_devices{\(labels)} 12\n"))
        #expect(text.contains("backlot_device_installs_total{\(labels),outcome=\"started\"} 30\n"))
        #expect(!text.contains("outcome=\"failed\"}"), "a figure below 10 has no sample")
        #expect(
            !text.contains(#"channel="production",pack="Levels",version="3""#), "version 3's figures are all below 10")
        #expect(
            text.contains(#"backlot_release_role{app="com.example.game",pack="Levels",version="3",role="candidate"} 1"#)
        )
        #expect(text.contains(#"backlot_rollout_percent{app="com.example.game",pack="Levels",version="3"} 12.5"#))
    }
}
