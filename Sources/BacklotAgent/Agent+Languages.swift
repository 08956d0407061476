import BacklotClient
import BacklotExtension
import Foundation

/// The device's preferred languages: when they change, the agent makes a `languageChange` content
/// request (Apple's iOS 27 `BAContentRequest.languageChange`): the extension is called with it and
/// the localized packs are reconciled (``AssetPackManager/reconcilePreferredLanguages()``).
extension Agent {
    /// The preferred languages now: the configuration file's `BacklotPreferredLanguages` as the file
    /// says it now (read each round), else the environment's. A file that cannot be read or holds a
    /// wrong value now keeps what the agent had, and says so once.
    func currentPreferredLanguages() -> [String]? {
        do {
            let languages = try AgentConfiguration.preferredLanguages(atPath: configuration.sourcePath)
            lastLanguageWarning.withLock { $0 = nil }  // a later complaint is said again
            return languages
        } catch {
            let message = "languages: \(error); keeping the preferred languages the agent had"
            let isNew = lastLanguageWarning.withLock { last in
                let isNew = last != message
                last = message
                return isNew
            }
            if isNew { log(message) }
            return manager.preferredLanguages
        }
    }

    /// Queues a `languageChange` request when the preferred languages differ from those the agent
    /// recorded last (the first start records them without a request).
    func enqueueLanguageChangeIfChanged() {
        let configured = currentPreferredLanguages()
        manager.setPreferredLanguages(configured)
        let now = manager.preferredLanguages.joined(separator: ",")
        let before = (try? store.value(Self.preferredLanguagesKey)) ?? nil
        guard before != now else { return }
        do {
            // Queued before the new languages are recorded: a failure is tried again next round.
            if let before, try !store.queued().contains(where: { $0.request == .languageChange }) {
                _ = try store.enqueue(.languageChange, bypassBudget: false)
                log(
                    "languages: the preferred languages changed (\(before.isEmpty ? "none" : before) → \(now.isEmpty ? "none" : now))"
                )
            }
            try store.setValue(Self.preferredLanguagesKey, now)
        } catch {
            log("languages: the change of the preferred languages could not be queued: \(error)")
        }
    }

    /// The agent store's record of the preferred languages last seen, comma-separated.
    static let preferredLanguagesKey = "preferredLanguages"
}
