import Foundation

extension ChildProcess {
    /// The program `name` as the shell would find it on `PATH` (the first executable file of that
    /// name in its folders), nil when there is none.
    ///
    /// ```swift
    /// if let vulkaninfo = ChildProcess.findExecutable("vulkaninfo") { … }
    /// ```
    public static func findExecutable(_ name: String, path: String? = nil) -> String? {
        let folders = path ?? ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for folder in folders.split(separator: ":") where !folder.isEmpty {
            let candidate = folder + "/" + name
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }
}
