import Foundation

/// Runs the real `curl` client against a test server and returns status, headers and body.
struct Curl {
    struct Result {
        let status: Int
        let headers: [String: String]
        let body: [UInt8]
        let exitCode: Int32
        var text: String { String(decoding: body, as: UTF8.self) }
    }

    static func run(
        _ url: String, method: String = "GET", headers: [String: String] = [:], caFile: String? = nil,
        pathAsIs: Bool = false, extra: [String] = []
    ) throws -> Result {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("curl-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        var args = [
            "-s", "-S", "-o", dir.appendingPathComponent("body").path, "-D", dir.appendingPathComponent("head").path,
            "--max-time", "20",
        ]
        if method == "HEAD" { args.append("-I") } else if method != "GET" { args += ["-X", method] }
        for (k, v) in headers { args += ["-H", "\(k): \(v)"] }
        if let caFile { args += ["--cacert", caFile] }
        if pathAsIs { args.append("--path-as-is") }
        args += extra + [url]
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        p.arguments = args
        p.standardError = FileHandle.nullDevice
        try p.run()
        p.waitUntilExit()
        let head = (try? String(contentsOf: dir.appendingPathComponent("head"), encoding: .utf8)) ?? ""
        var status = 0
        var fields: [String: String] = [:]
        for line in head.split(separator: "\r\n") {
            if line.hasPrefix("HTTP/") {
                status = Int(line.split(separator: " ")[1]) ?? 0
                fields = [:]
                continue
            }
            if let colon = line.firstIndex(of: ":") {
                fields[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(
                    in: .whitespaces)
            }
        }
        let body = (try? Data(contentsOf: dir.appendingPathComponent("body"))).map(Array.init) ?? []
        return Result(status: status, headers: fields, body: body, exitCode: p.terminationStatus)
    }
}
