import BacklotHTTPServer
import BacklotProtocol
import BacklotRepository
import Foundation
import FuzzSupport

@testable import BacklotServer

#if canImport(Glibc)
import Glibc
#endif

/// The repository the inputs run against, in a temporary folder, and its admin token: made anew
/// every ``Fixture/inputsPerRepository`` inputs (the old one removed), so that what inputs create
/// (apps, tokens, audit entries) does not pile up and make every later input slower — a run of
/// millions otherwise slowed to a third, listing thousands of tokens — and a finding replays
/// against a repository like the one it was found in.
enum Fixture {
    static let inputsPerRepository = 20_000
    nonisolated(unsafe) static var current: (api: ManagementAPI, token: String, path: String)?
    nonisolated(unsafe) static var inputs = 0
    nonisolated(unsafe) static var made = 0

    static func next() -> (ManagementAPI, String) {
        if current == nil || inputs >= inputsPerRepository {
            if let old = current?.path {
                current = nil  // the repository and its database handles go before their folder
                try? FileManager.default.removeItem(atPath: old)
            }
            current = make()
            inputs = 0
        }
        inputs += 1
        return (current!.api, current!.token)
    }

    static func make() -> (api: ManagementAPI, token: String, path: String) {
        let base = FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm" : NSTemporaryDirectory()
        made += 1
        let path = base + "/backlot-fuzz-api-\(getpid())-\(made)"
        do {
            let repository = try Repository(directory: try RepositoryDirectory(path: path))
            let token = try String(contentsOfFile: repository.adminTokenPath, encoding: .utf8).trimmingCharacters(
                in: .whitespacesAndNewlines)
            return (ManagementAPI(repository: repository), token, path)
        } catch {
            fatalError("FuzzManagementAPI: cannot make the repository: \(error)")
        }
    }
}

/// The body, less its first byte, read as the endpoint body type that byte selects (of the 12), as
/// the routes read theirs (``RequestBodyDecoder``). Before 2026-12-05 every input was read as all
/// 12 types in turn, which cost most of each execution; the fuzzer now picks the type, so that
/// each type's decoder is still reached by inputs made for it.
func decodeAsSelectedBody(_ body: [UInt8]) {
    guard let selector = body.first else { return }
    let rest = Array(body.dropFirst())
    func read<T: Decodable>(_ type: T.Type) { _ = ManagementAPI.answer(rest, as: T.self) { _ in .json(200, "{}") } }
    switch selector % 12 {
    case 0: read(API.AppCreate.self)
    case 1: read(API.AppChange.self)
    case 2: read(API.PackCreate.self)
    case 3: read(API.VersionCreate.self)
    case 4: read(API.ReleaseCreate.self)
    case 5: read(API.Rejection.self)
    case 6: read(API.RolloutChange.self)
    case 7: read(API.RollbackRequest.self)
    case 8: read(API.WithdrawRequest.self)
    case 9: read(API.TokenCreate.self)
    case 10: read(API.DeviceReport.self)
    default: read(API.PhasedRolloutRequest.self)
    }
}

/// libFuzzer harness for the management API's request handling without a socket: path routing,
/// authorisation and the JSON body decoding, through `ManagementAPI.route` on a real repository.
///
/// The input is an HTTP request head and body: `METHOD PATH`, header lines, an empty line, the
/// body. `$ADMIN` in a header stands for the repository's admin token. The body is also decoded
/// directly as the endpoint body type its first byte selects (``decodeAsSelectedBody(_:)``), which
/// needs no repository.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = FuzzDriver.bytes(data, size)
    let (api, token) = Fixture.next()
    var head: [UInt8] = bytes
    var body: [UInt8] = []
    if let split = bytes.firstRange(of: [UInt8(ascii: "\n"), UInt8(ascii: "\n")]) {
        head = Array(bytes[..<split.lowerBound])
        body = Array(bytes[split.upperBound...])
    }
    let lines = head.split(separator: UInt8(ascii: "\n")).map { String(decoding: $0, as: UTF8.self) }
    let requestLine = (lines.first ?? "").split(separator: " ", maxSplits: 1).map(String.init)
    let method = requestLine.first ?? "GET"
    let target = requestLine.count > 1 ? requestLine[1] : "/api"
    var headers: [String: String] = [:]
    for line in lines.dropFirst() {
        guard let colon = line.firstIndex(of: ":") else { continue }
        headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            .replacingOccurrences(of: "$ADMIN", with: token)
    }
    let request = HTTPRequest(method: method, path: target, headers: headers)
    switch api.route(request) {
    case .buffer(let limit, let then)?:
        if body.count <= limit { _ = then(body) }
    case .receive(let receiver)?:
        receiver.abort()
    case .respond?, nil:
        break
    }

    if body.count <= ManagementAPI.bodyLimit { decodeAsSelectedBody(body) }
    return 0
}

@_cdecl("FuzzManagementAPI_main")
public func entry(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    FuzzDriver.run(argc, argv, fuzz)
}
