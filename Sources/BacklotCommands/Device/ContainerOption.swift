/// The container a client command works on, declared once.
enum ContainerOption {
    static let container = Option<String>("container", "DIR", help: "The container folder.")
}
