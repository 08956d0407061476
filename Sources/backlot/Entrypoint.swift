import BacklotCommands

#if canImport(Glibc)
import Glibc
#endif

@main struct Entrypoint {
    static func main() {
        BacklotCLI.installInterruptCleanup()
        exit(BacklotCLI.main(Array(CommandLine.arguments.dropFirst()), io: StandardIO()))
    }
}
