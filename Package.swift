// swift-tools-version:6.0
// Backlot: package → publish → serve → deliver in the background → use.
//
// Modules follow the pipeline and depend one way:
//   C shims ← BacklotBasics ← BacklotCrypto, BacklotZstd, BacklotJSON ← BacklotFormat ← BacklotCommands ← backlot
import PackageDescription

/// Where the package is: libbacklot's linker flags name its symbol map by absolute path.
let packageRoot = Context.packageDirectory

/// A C library found by pkg-config, wrapped as a `C*` module (module.modulemap + shim.h).
func systemLibrary(_ name: String, pkgConfig: String, apt: String) -> Target {
    .systemLibrary(name: name, pkgConfig: pkgConfig, providers: [.apt([apt])])
}

let package = Package(
    name: "Backlot",
    products: [
        .executable(name: "backlot", targets: ["backlot"]),
        .library(name: "BacklotFormat", targets: ["BacklotFormat"]),
        // What an app links (Examples/GameApp shows all three): AssetPackManager and DownloadManager,
        // the downloader extension's protocols, and the task scheduler.
        .library(name: "BacklotClient", targets: ["BacklotClient"]),
        .library(name: "BacklotExtension", targets: ["BacklotExtension"]),
        .library(name: "BacklotTaskScheduler", targets: ["BacklotTaskScheduler"]),
        // libbacklot: the client as a C library (include/backlot/backlot.h), for every language
        // that calls C. Built as libBacklotCAPI.so with the soname libbacklot.so.0; installed as libbacklot.so.
        .library(name: "BacklotCAPI", type: .dynamic, targets: ["BacklotCAPI"]),
    ],
    targets: [
        // C shims: the only place C headers are imported.
        systemLibrary("CZstd", pkgConfig: "libzstd", apt: "libzstd-dev"),
        systemLibrary("CCrypto", pkgConfig: "libcrypto", apt: "libssl-dev"),
        systemLibrary("CMicroHTTPD", pkgConfig: "libmicrohttpd", apt: "libmicrohttpd-dev"),
        systemLibrary("CSQLite", pkgConfig: "sqlite3", apt: "libsqlite3-dev"),
        systemLibrary("CCurl", pkgConfig: "libcurl", apt: "libcurl4-openssl-dev"),
        systemLibrary("CPostgreSQL", pkgConfig: "libpq", apt: "libpq-dev"),
        systemLibrary("CZlib", pkgConfig: "zlib", apt: "zlib1g-dev"),
        systemLibrary("CLZMA", pkgConfig: "liblzma", apt: "liblzma-dev"),
        systemLibrary("CLZ4", pkgConfig: "liblz4", apt: "liblz4-dev"),
        // Linux calls missing from Swift's Glibc module (openat2), header only.
        .systemLibrary(name: "CLinuxSupport"),
        // libbacklot's public header (include/backlot/backlot.h), which BacklotCAPI implements.
        .systemLibrary(name: "CBacklot"),

        // Shared vocabulary: structured errors, atomic files, directory walking.
        .target(name: "BacklotBasics", dependencies: ["CLinuxSupport"]),
        // One small Swift wrapper per C library.
        .target(name: "BacklotCrypto", dependencies: ["CCrypto", "BacklotBasics"]),
        .target(name: "BacklotZstd", dependencies: ["CZstd", "BacklotBasics"]),
        // Apple Archive's block codecs: zlib, liblzma and liblz4 (one file each) and LZFSE, decoded in Swift.
        .target(name: "BacklotCodecs", dependencies: ["CZlib", "CLZMA", "CLZ4"]),
        // JSON with comments and positions, for manifests written by hand.
        .target(name: "BacklotJSON", dependencies: ["BacklotBasics"]),
        // The pack format: manifest, selectors, chunker, archive, index, verify, extract, diff.
        .target(
            name: "BacklotFormat",
            dependencies: ["CLinuxSupport", "BacklotBasics", "BacklotCrypto", "BacklotJSON", "BacklotZstd"]),
        // Apple Archives (.aar) read completely and written: blocks, entries, paths, checksums.
        .target(
            name: "BacklotAppleArchive",
            dependencies: ["BacklotBasics", "BacklotCodecs", "BacklotCrypto", "BacklotFormat"]),
        // SQLite behind a Mutex-owned connection.
        .target(name: "BacklotStore", dependencies: ["CSQLite", "BacklotBasics"]),
        // The device container: every path and lock the app, the agent and the extension share, and the launch record.
        .target(name: "BacklotContainer", dependencies: ["BacklotBasics", "BacklotCrypto", "BacklotStore"]),
        // PostgreSQL (libpq) behind the same store interface as SQLite (MetadataDatabase), for the repository's metadata.
        .target(name: "BacklotPostgres", dependencies: ["CPostgreSQL", "BacklotBasics", "BacklotStore"]),
        // What server and client share: the signed catalog, its envelope, the key list, channels, the rollout rule.
        .target(
            name: "BacklotProtocol", dependencies: ["BacklotBasics", "BacklotCrypto", "BacklotFormat", "BacklotJSON"]),
        // The repository: apps, versions, releases, tokens, signed catalogs, key lists, the published tree.
        .target(
            name: "BacklotRepository",
            dependencies: [
                "BacklotAppleArchive", "BacklotBasics", "BacklotProtocol", "BacklotCrypto", "BacklotFormat",
                "BacklotJSON",
                "BacklotS3", "BacklotStore", "BacklotZstd",
            ]),
        // An HTTP(S) server on libmicrohttpd: an epoll pool, a TLS gate, suspended connections for blocking work.
        .target(name: "BacklotHTTPServer", dependencies: ["CMicroHTTPD", "BacklotBasics"]),
        // The hosting server: the published tree over HTTP(S) with Range and ETag, the management API, metrics.
        .target(
            name: "BacklotServer",
            dependencies: [
                "BacklotBasics", "BacklotProtocol", "BacklotCrypto", "BacklotFormat", "BacklotHTTPServer",
                "BacklotJSON", "BacklotStore",
                "BacklotRepository",
            ],
            // The dashboard's files, compiled into the binary as byte arrays (PackageResources).
            resources: [.embedInCode("Dashboard")]),
        // An HTTP(S) client on libcurl, for the CLI and the client library.
        .target(name: "BacklotHTTPClient", dependencies: ["CCurl", "BacklotBasics"]),
        // An S3 client: SigV4 signing, objects, listings, multipart uploads, retries, structured errors.
        .target(name: "BacklotS3", dependencies: ["BacklotBasics", "BacklotCrypto", "BacklotHTTPClient"]),
        // The client: AssetPackManager, the delta downloader, the container store.
        .target(
            name: "BacklotClient",
            dependencies: [
                "BacklotBasics", "BacklotProtocol", "BacklotContainer", "BacklotCrypto", "BacklotFormat",
                "BacklotHTTPClient", "BacklotInfoPlist", "BacklotJSON", "BacklotStore", "BacklotZstd",
            ]),
        // Downloader extensions: Apple's protocols, built into an executable the agent runs.
        .target(
            name: "BacklotExtension", dependencies: ["BacklotBasics", "BacklotClient", "BacklotFormat", "BacklotJSON"]),
        // The background agent: events, periodic checks, the extension under limits, background launches.
        .target(
            name: "BacklotAgent",
            dependencies: [
                "BacklotBasics", "BacklotProtocol", "BacklotClient", "BacklotContainer", "BacklotCrypto",
                "BacklotExtension", "BacklotFormat", "BacklotInfoPlist", "BacklotJSON", "BacklotPeerCache",
                "BacklotTaskScheduler",
            ]),
        // The LAN peer cache: a device's installed chunks served to its neighbours by ID, advertised over mDNS.
        .target(
            name: "BacklotPeerCache",
            dependencies: [
                "BacklotBasics", "BacklotClient", "BacklotHTTPServer", "BacklotInfoPlist", "BacklotProtocol",
            ]),
        // The fleet simulator: thousands of devices from one process, through the client's own code (`backlot fleet`).
        .target(
            name: "BacklotFleet",
            dependencies: ["BacklotBasics", "BacklotClient", "BacklotCrypto", "BacklotFormat", "BacklotProtocol"]),
        // App Clips: size budgets, default links, advanced-experience matching, handing packs to the full app.
        .target(name: "BacklotAppClips", dependencies: ["BacklotBasics", "BacklotClient", "BacklotJSON"]),
        // Apple's Info.plist: XML and binary property lists, and the Background Assets key rules.
        .target(name: "BacklotInfoPlist", dependencies: ["BacklotBasics", "BacklotJSON"]),
        // The task scheduler: Apple's BGTaskScheduler rules, pending requests in SQLite, Linux network and power conditions.
        .target(
            name: "BacklotTaskScheduler",
            dependencies: ["BacklotBasics", "BacklotContainer", "BacklotInfoPlist"]),
        // The command-line interface, as a library so tests can drive it.
        .target(
            name: "BacklotCommands",
            dependencies: [
                "BacklotAgent", "BacklotAppClips", "BacklotAppleArchive", "BacklotBasics", "BacklotProtocol",
                "BacklotClient",
                "BacklotContainer", "BacklotCrypto", "BacklotExtension", "BacklotFleet", "BacklotFormat",
                "BacklotHTTPClient", "BacklotHTTPServer", "BacklotInfoPlist", "BacklotJSON", "BacklotPeerCache",
                "BacklotPostgres", "BacklotRepository", "BacklotS3", "BacklotServer", "BacklotStore",
                "BacklotTaskScheduler",
            ]),
        .executableTarget(name: "backlot", dependencies: ["BacklotCommands"]),
        // The C interface over the client: handles, statuses, callbacks (libbacklot).
        .target(
            name: "BacklotCAPI",
            dependencies: ["CBacklot", "BacklotBasics", "BacklotFormat", "BacklotProtocol", "BacklotClient"],
            linkerSettings: [
                .unsafeFlags([
                    "-Xlinker", "-soname=libbacklot.so.0",
                    "-Xlinker", "--version-script=\(packageRoot)/include/backlot/libbacklot.map",
                ])
            ]),

        // Helper executables for the agent's tests (built with the package, never inside a test).
        .executableTarget(
            name: "backlot-test-extension",
            dependencies: ["BacklotClient", "BacklotContainer", "BacklotCrypto", "BacklotExtension"]),
        .executableTarget(
            name: "backlot-test-app", dependencies: ["BacklotClient", "BacklotContainer", "BacklotTaskScheduler"]),

        // Helpers shared by the test targets: temporary folders, seeded data, sample packs.
        .target(
            name: "BacklotTestSupport",
            dependencies: [
                "BacklotBasics", "BacklotProtocol", "BacklotClient", "BacklotCrypto", "BacklotFormat",
                "BacklotHTTPClient", "BacklotPostgres", "BacklotRepository", "BacklotS3", "BacklotServer",
                "BacklotStore", "BacklotZstd",
            ]),
        .testTarget(name: "BacklotBasicsTests", dependencies: ["BacklotBasics"]),
        .testTarget(
            name: "BacklotCryptoTests", dependencies: ["BacklotBasics", "BacklotCrypto", "BacklotTestSupport"]),
        .testTarget(
            name: "BacklotZstdTests",
            dependencies: ["BacklotBasics", "BacklotCrypto", "BacklotTestSupport", "BacklotZstd"]),
        .testTarget(name: "BacklotStoreTests", dependencies: ["BacklotBasics", "BacklotStore", "BacklotTestSupport"]),
        .testTarget(
            name: "BacklotContainerTests",
            dependencies: [
                "BacklotAgent", "BacklotBasics", "BacklotClient", "BacklotContainer", "BacklotExtension",
                "BacklotStore", "BacklotTaskScheduler", "BacklotTestSupport",
            ],
            exclude: ["Fixtures"]),
        .testTarget(
            name: "BacklotExtensionTests",
            dependencies: ["BacklotBasics", "BacklotClient", "BacklotExtension", "BacklotFormat", "BacklotJSON"]),
        .testTarget(
            name: "BacklotHTTPClientTests",
            dependencies: [
                "BacklotBasics", "BacklotCrypto", "BacklotHTTPClient", "BacklotHTTPServer", "BacklotTestSupport",
            ]),
        .testTarget(name: "BacklotJSONTests", dependencies: ["BacklotBasics", "BacklotJSON"]),
        .testTarget(
            name: "BacklotAppleArchiveTests",
            dependencies: [
                "BacklotAppleArchive", "BacklotBasics", "BacklotCodecs", "BacklotCrypto", "BacklotFormat",
                "BacklotTestSupport",
            ]),
        .testTarget(name: "BacklotProtocolTests", dependencies: ["BacklotBasics", "BacklotProtocol", "BacklotFormat"]),
        .testTarget(
            name: "BacklotFormatTests",
            dependencies: [
                "BacklotBasics", "BacklotCrypto", "BacklotFormat", "BacklotJSON", "BacklotTestSupport", "BacklotZstd",
            ],
            exclude: ["Fixtures"]),
        .testTarget(
            name: "BacklotRepositoryTests",
            dependencies: [
                "BacklotBasics", "BacklotProtocol", "BacklotCrypto", "BacklotFormat", "BacklotJSON", "BacklotPostgres",
                "BacklotRepository", "BacklotS3", "BacklotStore", "BacklotTestSupport",
            ]),
        .testTarget(
            name: "BacklotServerTests",
            dependencies: [
                "BacklotBasics", "BacklotProtocol", "BacklotCrypto", "BacklotFormat", "BacklotHTTPClient",
                "BacklotHTTPServer", "BacklotJSON", "BacklotPostgres", "BacklotRepository", "BacklotServer",
                "BacklotTestSupport",
            ]),
        .testTarget(
            name: "BacklotClientTests",
            dependencies: [
                "BacklotBasics", "BacklotProtocol", "BacklotClient", "BacklotContainer", "BacklotCrypto",
                "BacklotFormat", "BacklotHTTPClient", "BacklotHTTPServer", "BacklotInfoPlist", "BacklotJSON",
                "BacklotPeerCache", "BacklotRepository", "BacklotS3", "BacklotServer", "BacklotStore",
                "BacklotTestSupport", "BacklotZstd",
            ]),
        .testTarget(
            name: "BacklotAgentTests",
            dependencies: [
                "BacklotAgent", "BacklotBasics", "BacklotClient", "BacklotContainer", "BacklotCrypto",
                "BacklotExtension", "BacklotFormat", "BacklotJSON", "BacklotTaskScheduler", "BacklotTestSupport",
                "backlot-test-app", "backlot-test-extension",
            ]),
        .testTarget(
            name: "BacklotFleetTests",
            dependencies: [
                "BacklotBasics", "BacklotClient", "BacklotCrypto", "BacklotFleet", "BacklotHTTPServer",
                "BacklotProtocol",
                "BacklotTestSupport",
            ]),
        .testTarget(
            name: "BacklotAppClipsTests",
            dependencies: ["BacklotAppClips", "BacklotBasics", "BacklotClient", "BacklotJSON", "BacklotTestSupport"]),
        .testTarget(
            name: "BacklotTaskSchedulerTests",
            dependencies: [
                "BacklotBasics", "BacklotContainer", "BacklotInfoPlist", "BacklotStore", "BacklotTaskScheduler",
                "BacklotTestSupport",
            ]),
        .testTarget(
            name: "BacklotInfoPlistTests", dependencies: ["BacklotBasics", "BacklotInfoPlist"], exclude: ["Fixtures"]),
        .testTarget(
            name: "BacklotS3Tests", dependencies: ["BacklotBasics", "BacklotCrypto", "BacklotS3", "BacklotTestSupport"]),
        .testTarget(
            name: "BacklotCommandsTests",
            dependencies: [
                "BacklotAgent", "BacklotAppleArchive", "BacklotBasics", "BacklotProtocol", "BacklotClient",
                "BacklotCommands", "BacklotContainer", "BacklotCrypto", "BacklotFormat", "BacklotHTTPClient",
                "BacklotHTTPServer", "BacklotJSON", "BacklotRepository", "BacklotS3", "BacklotServer", "BacklotStore",
                "BacklotTestSupport",
            ]),
        // Apple's code on Backlot (docs/porting.md): the seeds' snippets and code written from Apple's
        // declarations, with only the imports changed, as an app, an extension and compiled test sources.
        .executableTarget(
            name: "backlot-apple-sample-app", dependencies: ["BacklotClient"], path: "Tests/AppleSamples/SampleApp"),
        .executableTarget(
            name: "backlot-apple-sample-extension", dependencies: ["BacklotClient", "BacklotExtension"],
            path: "Tests/AppleSamples/SampleExtension"),
        .testTarget(
            name: "BacklotAppleSourceTests",
            dependencies: [
                "BacklotBasics", "BacklotProtocol", "BacklotClient", "BacklotCrypto", "BacklotExtension",
                "BacklotHTTPClient", "BacklotJSON", "BacklotTaskScheduler", "BacklotTestSupport",
                "backlot-apple-sample-app", "backlot-apple-sample-extension",
            ]),
    ]
)

// Fuzz harnesses (libFuzzer): built only with BACKLOT_FUZZ=1, by `scripts/fuzz` (`make fuzz`).
// Each defines LLVMFuzzerTestOneInput and has no main, so it is never part of the normal build.
if Context.environment["BACKLOT_FUZZ"] == "1" {
    func harness(_ name: String, _ dependencies: [Target.Dependency]) -> Target {
        .executableTarget(
            name: name, dependencies: ["FuzzSupport"] + dependencies, path: "Fuzz/\(name)",
            swiftSettings: [.unsafeFlags(["-parse-as-library"])])
    }
    package.targets += [
        .systemLibrary(name: "CFuzzerDriver", path: "Fuzz/CFuzzerDriver"),
        .target(name: "FuzzSupport", dependencies: ["CFuzzerDriver"], path: "Fuzz/FuzzSupport"),
        harness("FuzzJSONReader", ["BacklotJSON"]),
        harness("FuzzManifestParser", ["BacklotFormat"]),
        harness("FuzzPropertyList", ["BacklotInfoPlist"]),
        harness("FuzzPackIndex", ["BacklotFormat"]),
        harness("FuzzPackDelta", ["BacklotCrypto", "BacklotFormat", "BacklotZstd"]),
        harness("FuzzAppleArchive", ["BacklotAppleArchive", "BacklotBasics", "BacklotCodecs"]),
        harness("FuzzCatalog", ["BacklotProtocol", "BacklotCrypto", "BacklotFormat", "BacklotJSON"]),
        harness("FuzzHTTPHeaders", ["BacklotServer", "BacklotHTTPServer", "BacklotHTTPClient"]),
        harness("FuzzManagementAPI", ["BacklotServer", "BacklotHTTPServer", "BacklotProtocol", "BacklotRepository"]),
    ]
}
