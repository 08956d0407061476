import BacklotProtocol
import BacklotRepository

/// The coordinates of a pack, declared once: `--app`, `--pack`, `--version`, `--channel`.
enum PackOptions {
    static let app = Option<String>("app", "APP", help: "The app.")
    static let pack = Option<String>("pack", "ID", help: "The pack.")
    static let version = Option<Int>(
        "version", "N", help: "The version.", expected: "a whole number from 1", check: { $0 >= 1 })
    static let channel = Option<Channel>("channel", "CHANNEL", help: "The channel.")
    static let optionalChannel = Option<Channel?>("channel", "CHANNEL", help: "Only this channel.")
    static let optionalVersion = Option<Int?>("version", "N", in: 1...Int.max, help: "The version.")
}

/// A release channel and an API role, as the command line and the API spell them.
extension Channel: ArgumentValue {}
extension Role: ArgumentValue {}
