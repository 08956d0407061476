// swift-tools-version:6.0
// An app that uses Backlot as a library, as a game studio's would: the app itself (AssetPackManager
// and a background task), and its downloader extension. It depends on Backlot by path; a real app
// would name the repository's URL instead.
import PackageDescription

let package = Package(
    name: "GameApp",
    dependencies: [.package(name: "Backlot", path: "../..")],
    targets: [
        .executableTarget(
            name: "GameApp",
            dependencies: [
                .product(name: "BacklotClient", package: "Backlot"),
                .product(name: "BacklotTaskScheduler", package: "Backlot"),
            ]),
        .executableTarget(
            name: "GameDownloader",
            dependencies: [
                .product(name: "BacklotExtension", package: "Backlot"),
                .product(name: "BacklotClient", package: "Backlot"),
            ]),
    ]
)
