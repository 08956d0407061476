import BacklotBasics
import BacklotCrypto

/// Every path of a device container, named once: the files and folders that the app, the agent,
/// the downloader extension and the command line share. Nothing else in Backlot spells a
/// container path.
///
/// ```text
/// CONTAINER/
///   state.sqlite            the client's state: verified catalog, installed releases, requests, URL downloads
///   agent.sqlite            the agent's queue of events, its budgets and its children
///   tasks.sqlite            the task scheduler's requests, runs and the app's launches
///   packs/ID-HASH/          installed packs (one folder per pack ID)
///   downloads/              partial URL downloads (HASH.part, HASH.takeover), downloads/handover/
///   .extension-calls/       call and answer files of the downloader extension, the manifest copy
///   .agent-wake             the agent's wake-up FIFO
///   .*.lock, .download-locks/   the locks of ContainerLock
/// ```
///
/// ```swift
/// let layout = ContainerLayout(root: "/home/me/.local/share/backlot/game")
/// let db = try Database(path: layout.stateDatabase)
/// ```
public struct ContainerLayout: Sendable, Hashable {
    /// The container folder (absolute, or as given).
    public let root: String

    public init(root: String) { self.root = root }

    /// The client's state (catalog, installed releases, requests, URL downloads).
    public var stateDatabase: String { root + "/state.sqlite" }
    /// The agent's queue of events, budgets and children.
    public var agentDatabase: String { root + "/agent.sqlite" }
    /// The task scheduler's requests and runs, and the app's launches.
    public var tasksDatabase: String { root + "/tasks.sqlite" }

    /// Where installed packs live.
    public var packsFolder: String { root + "/packs" }
    /// The folder of one installed pack: its ID's digest keeps any ID a single safe name.
    public func packFolder(_ id: String) -> String { packsFolder + "/" + Self.digestName(id, 32) }
    /// Where the files of a pack that is not installed are reported (never created).
    public var missingFolder: String { root + "/missing" }

    /// Partial URL downloads and their take-over requests.
    public var downloadsFolder: String { root + "/downloads" }
    /// The partial file of a URL download.
    public func partialDownload(_ identifier: String) -> String {
        downloadsFolder + "/" + Self.digestName(identifier, 32) + ".part"
    }
    /// The file whose presence asks the process transferring a URL download to give it up.
    public func downloadTakeover(_ identifier: String) -> String {
        downloadsFolder + "/" + Self.digestName(identifier, 32) + ".takeover"
    }
    /// Finished URL downloads waiting to be handed to the app.
    public var handoverFolder: String { downloadsFolder + "/handover" }

    /// The file of the hand-over folder a recorded outcome names, rebuilt from the last name of
    /// the recorded `path`: a row another process wrote (with its own spelling of the container's
    /// path, or crafted) never has a file elsewhere delivered, renamed or deleted. Nil when that
    /// name is not a plain file name, or the folder is a link or not a folder.
    public func handoverFile(recorded path: String) -> String? {
        Self.file(recorded: path, in: handoverFolder)
    }

    /// A URL download's file in the downloads folder (its partial file) that a recorded outcome
    /// names, rebuilt the same way as ``handoverFile(recorded:)``.
    public func downloadsFile(recorded path: String) -> String? {
        Self.file(recorded: path, in: downloadsFolder)
    }

    private static func file(recorded path: String, in folder: String) -> String? {
        guard let name = recordedName(path), (try? FileSystem.linkStatus(folder))??.kind == .directory
        else { return nil }
        return folder + "/" + name
    }

    /// The last name of a recorded path (``handoverFile(recorded:)``, ``downloadsFile(recorded:)``),
    /// nil when it is not a plain file name: the name a file is found by relative to the folders
    /// ``openDownloadFolders()`` opens.
    public static func recordedName(_ path: String) -> String? {
        guard let name = path.split(separator: "/", omittingEmptySubsequences: false).last,
            !name.isEmpty, name != ".", name != "..", !name.utf8.contains(0)
        else { return nil }
        return String(name)
    }

    /// ``downloadsFolder`` and its ``handoverFolder``, made when missing and opened as folders of
    /// their own (a link or a file there is refused): the app can write the container, so every
    /// rename and removal of a download's file goes through these descriptors, never through a
    /// link swapped in since.
    /// - Throws: ``BacklotError/Code/untrusted`` when either is a link or not a folder;
    ///   ``BacklotError/Code/io``.
    public func openDownloadFolders() throws -> (downloads: DirectoryHandle, handover: DirectoryHandle) {
        let downloads = try DirectoryHandle(ownFolder: downloadsFolder)
        let name = String(handoverFolder.dropFirst(downloadsFolder.count + 1))
        if !downloads.contains(name) { _ = try? downloads.makeFolder(name, mode: 0o777) }
        return (downloads, try downloads.openFolder(Array(name.utf8)))
    }

    /// The downloader extension's call and answer files.
    public var extensionCallsFolder: String { root + "/" + Self.extensionCallsName }
    private static let extensionCallsName = ".extension-calls"

    /// ``extensionCallsFolder``, made when missing and opened as a folder of its own: the app can
    /// write the container, and a link there would send the agent's files (and the mode it sets
    /// on them) wherever it points. Everything the agent makes, reads or removes in it goes
    /// through the returned handle, so the folder swapped for a link after this check changes
    /// nothing (see ``DirectoryHandle``'s writing methods).
    /// - Throws: ``BacklotError/Code/untrusted`` when it is a link or not a folder; ``BacklotError/Code/io``.
    public func openExtensionCallsFolder() throws -> DirectoryHandle {
        do {
            return try DirectoryHandle(ownFolder: extensionCallsFolder)
        } catch let error as BacklotError where error.code == .untrusted {
            throw BacklotError(
                .untrusted, "the extension calls' folder is a link or not a folder", context: extensionCallsFolder,
                hint: "remove it: the agent makes it again")
        }
    }

    /// Removes ``extensionCallsFolder`` and what is in it, following no link on the way (a link
    /// there is removed itself). Best effort, as at the agent's start.
    public func removeExtensionCallsFolder() {
        guard let container = try? DirectoryHandle(path: root) else { return }
        container.removeTree(Self.extensionCallsName)
    }

    /// The agent's wake-up FIFO.
    public var agentWakeChannel: String { root + "/.agent-wake" }
    /// The folder of the per-download locks.
    public var downloadLocksFolder: String { root + "/.download-locks" }

    /// A file or folder of the app's own in its container (a log, settings, files it received):
    /// Backlot never reads or removes it. `name` is relative and must not start with a dot (the
    /// dot-names are Backlot's).
    public func appFile(_ name: String) -> String {
        precondition(
            !name.hasPrefix(".") && !name.hasPrefix("/"),
            "an app's own file has a relative name that does not start with a dot")
        return root + "/" + name
    }

    /// A name for `text` made of the first `length` hex digits of its SHA-256.
    static func digestName(_ text: String, _ length: Int) -> String {
        String(SHA256.hash(Array(text.utf8)).hex.prefix(length))
    }
}
