import BacklotBasics
import BacklotContainer

/// One process at a time installs a given pack into a container, so two processes asking for the
/// same pack download it once; and one process at a time is the container's executor
/// (``tryAcquire(container:)``). Both are ``ContainerLock``s.
enum ExecutorLock {
    /// Takes the container's executor lock if no other process (or task) holds it.
    static func tryAcquire(container: String) -> FileLock? {
        try? ContainerLayout(root: container).acquire(.executor, waiting: false)
    }

    static func holding<T>(container: String, pack: String, _ body: () throws -> T) throws -> T {
        try ContainerLayout(root: container).holding(.install(pack: pack), body)
    }
}
