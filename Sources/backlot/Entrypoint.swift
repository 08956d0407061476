import BacklotCommands
@main struct Main { static func main() {} }
