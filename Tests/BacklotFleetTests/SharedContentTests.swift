import BacklotBasics
import BacklotTestSupport
import Dispatch
import Foundation
import Synchronization
import Testing

@testable import BacklotFleet

/// The fleet's shared copy of what devices hold (`SharedContent`).
@Suite struct SharedContentTests {
    /// Devices installing one release at once share its files together: whichever links a file
    /// first is kept, the others' copies give way to it, and none fails (a race that was counted
    /// as a failed check, `check: io`, "link failed: File exists").
    @Test func devicesSharingOneReleaseAtOnceAllEndOnTheKeptCopy() throws {
        let dir = try TemporaryDirectory("shared-content")
        defer { dir.remove() }
        let devices = 6
        let files = 30
        try FileSystem.makeDirectory(dir.at("store"))  // made by the fleet before its devices
        let content = SharedContent(root: dir.at("store"))
        for round in 0..<10 {
            for d in 0..<devices {
                for i in 0..<files { try dir.write("r\(round)/d\(d)/sub/f\(i)", Array("file \(i)".utf8)) }
            }
            let errors = Mutex<[String]>([])
            DispatchQueue.concurrentPerform(iterations: devices) { d in
                do {
                    try content.share(releaseFolder: dir.at("r\(round)/d\(d)"), release: "R\(round)")
                } catch {
                    errors.withLock { $0.append("\(error)") }
                }
            }
            #expect(errors.withLock { $0 } == [], "round \(round)")
            for i in 0..<files {
                let kept = try #require(try FileSystem.linkStatus(dir.at("store/R\(round)/sub/f\(i)")))
                for d in 0..<devices {
                    let held = try #require(try FileSystem.linkStatus(dir.at("r\(round)/d\(d)/sub/f\(i)")))
                    #expect(held.isSameFile(as: kept), "round \(round), device \(d), file \(i)")
                }
            }
        }
    }
}
