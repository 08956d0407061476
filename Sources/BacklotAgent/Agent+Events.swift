import BacklotBasics
import BacklotClient
import BacklotContainer
import BacklotExtension
import BacklotFormat
import BacklotProtocol
import BacklotTaskScheduler
import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Install, update and periodic events: the queue, the extension's calls, the packs they fetch.
extension Agent {
    /// Runs every queued event once (what `backlot notify` does when no agent runs).
    public func runQueuedEvents() async {
        for event in (try? store.queued(dueAt: clock.now)) ?? [] where !isStopping {
            await runQueued(event)
        }
    }

    /// Runs a queued event and records its outcome; one that could not finish (network, stop) stays queued.
    public func runQueued(_ event: AgentStore.Event) async {
        do {
            let report = try await process(event)
            busyStreak.store(0, ordering: .relaxed)
            try? store.finish(event.seq, state: "done", detail: Self.describe(report))
            log("event \(event.request.name): done — \(Self.describe(report))")
        } catch let e as Deferral {
            try? store.noteProblem(event.seq, code: "waiting", detail: e.reason)
            log("event \(event.request.name): waiting (\(e.reason))")
        } catch let e as BacklotError where e.code == .unavailable {
            // The server sheds load: the event waits out its Retry-After (with jitter), or backs
            // off exponentially (15–30 s, then twice that each time, at most an hour) without one.
            let attempt = busyStreak.wrappingAdd(1, ordering: .relaxed).newValue
            let wait = CheckSchedule(interval: configuration.periodicCheckInterval).delay(
                after: .failed(attempt: attempt, retryAfter: e.retryAfter), random: Double.random(in: 0..<1))
            try? store.noteProblem(event.seq, code: e.code.name, detail: e.message)
            try? store.hold(event.seq, until: clock.now.addingTimeInterval(wait))
            log("event \(event.request.name): the server is busy; tried again in \(Int(wait)) s")
        } catch let e as BacklotError where e.code == .io || e.code == .cancelled {
            try? store.noteProblem(event.seq, code: e.code.name, detail: e.message)
            log("event \(event.request.name): will retry (\(e.message))")
        } catch let e as BacklotError where e.code == .tls {
            // Not the network: the server's certificate is not trusted. The event stays queued
            // (trust can be fixed without touching it) and says so, with what to trust.
            let text = e.message + (e.hint.map { "; \($0)" } ?? "")
            try? store.noteProblem(event.seq, code: e.code.name, detail: text)
            log("event \(event.request.name): TLS error, tried again later: \(text)")
        } catch {
            try? store.finish(event.seq, state: "failed", detail: "\(error)")
            log("event \(event.request.name): failed — \(error)")
        }
    }

    static func describe(_ r: EventReport) -> String {
        var parts = ["packs: \(r.packs.isEmpty ? "none" : r.packs.joined(separator: ", "))"]
        if !r.declined.isEmpty { parts.append("declined by the extension: \(r.declined.joined(separator: ", "))") }
        if !r.scheduled.isEmpty { parts.append("scheduled: \(r.scheduled.joined(separator: ", "))") }
        if !r.refused.isEmpty { parts.append("refused: \(r.refused.joined(separator: "; "))") }
        if !r.extensionFailures.isEmpty { parts.append("extension: \(r.extensionFailures.joined(separator: "; "))") }
        return parts.joined(separator: "; ")
    }

    /// Why an event waits.
    struct Deferral: Error { let reason: String }

    /// Does what an event asks (see the type's summary). Idempotent: packs already installed are
    /// not fetched again, and the extension's `downloads(for:)` runs once per event.
    public func process(_ event: AgentStore.Event) async throws -> EventReport {
        var report = EventReport(request: event.request)
        try waitForNetwork(metered: true)
        // Before the app's first launch, the catalog's host must be allowed, and its bytes count.
        try downloads.checkHostBeforeFirstLaunch(manager.configuration.catalogURL)
        let offered = try await manager.allAssetPacks.sorted { $0.id < $1.id }
        try downloads.countCatalogFetch()
        if event.request == .languageChange {
            try await reconcileLanguages(event, into: &report)
        } else if event.request != .periodic {
            let installEvent: InstallationEventType = event.request == .install ? .firstInstallation : .subsequentUpdate
            var candidates = offered.filter { $0.downloadPolicy.installationEventTypes.contains(installEvent) }
            if configuration.scheduler.isAppClip {
                candidates.removeAll { if case .essential = $0.downloadPolicy { true } else { false } }
            }
            // When the extension's budget is used up, the essential phase still runs (the budget
            // limits the extension's runtime, not the essential packs): every essential candidate is
            // kept, as when the call fails, and the rest of the event waits for the budget.
            var budgetWaits = false
            if let runner = extensionRunner, !candidates.isEmpty {
                // Asked once per event: a retry (network, stop) keeps the extension's answer.
                var accepted = try store.accepted(event.seq).map(Set.init)
                if accepted == nil {
                    do {
                        let call = ExtensionCall.shouldDownload(candidates)
                        let bypass = event.bypassBudget
                        let seq = event.seq
                        let reply = try await BlockingPool.shared.run {
                            try runner.call(call, bypassBudget: bypass, event: seq)
                        }
                        let kept = candidates.filter { !reply.declines($0) }.map(\.id)
                        try store.setAccepted(event.seq, kept)
                        accepted = Set(kept)
                    } catch let e as BacklotError where e.code == .budgetExhausted {
                        budgetWaits = true
                    } catch let e as BacklotError where e.code == .cancelled {
                        throw Deferral(reason: "stopping")
                    } catch is CancellationError {
                        throw Deferral(reason: "stopping")  // cancelled before the call started
                    } catch {
                        report.extensionFailures.append("shouldDownload: \(error)")  // the default: every candidate
                        try store.setAccepted(event.seq, candidates.map(\.id))
                    }
                }
                if let accepted {
                    report.declined = candidates.map(\.id).filter { !accepted.contains($0) }
                    candidates.removeAll { !accepted.contains($0.id) }
                }
            }
            for pack in candidates where pack.downloadPolicy.name == "essential" {
                if let refusal = try refusalBeforeFirstLaunch(pack, essential: true) {
                    report.refused.append(refusal)
                    continue
                }
                try await fetch(pack, unmeteredOnly: false, essential: true)
                report.packs.append(pack.id)
            }
            if budgetWaits {
                try store.markEssentialDone(event.seq)  // downloads(for:) cannot run today
                try store.holdUntilTomorrow(event.seq, now: clock.now)
                throw Deferral(
                    reason:
                        "the extension's daily budget is used up; the essential packs are installed, the rest waits for the budget to renew"
                )
            }
            let extensionWaits = try await runExtensionDownloads(event, into: &report)
            try await waitForEssentialDownloads(event)
            // Announced apart only when work follows it: otherwise the event's end records it, and
            // `notify --wait` reports the event done rather than its essential phase a moment before.
            if extensionWaits || candidates.contains(where: { $0.downloadPolicy.name == "prefetch" }) {
                try store.markEssentialDone(event.seq)
            }
            for pack in candidates where pack.downloadPolicy.name == "prefetch" {
                if let refusal = try refusalBeforeFirstLaunch(pack, essential: false) {
                    report.refused.append(refusal)
                    continue
                }
                try await fetch(pack, unmeteredOnly: configuration.prefetchRequiresUnmetered, essential: false)
                report.packs.append(pack.id)
            }
            if extensionWaits {
                try store.holdUntilTomorrow(event.seq, now: clock.now)
                throw Deferral(
                    reason: "the extension's daily budget is used up; its downloads(for:) runs when the budget renews")
            }
        } else {
            if try await runExtensionDownloads(event, into: &report) {
                try store.holdUntilTomorrow(event.seq, now: clock.now)
                throw Deferral(
                    reason: "the extension's daily budget is used up; the periodic check runs when it renews")
            }
            try waitForNetwork(metered: !configuration.prefetchRequiresUnmetered)
            let (updating, removed) = try await manager.checkForUpdates()
            if let hint = manager.checkAfterHint { deferNextPeriodicCheck(atLeast: TimeInterval(hint)) }
            report.packs = updating.sorted()
            if !removed.isEmpty { log("periodic: removed obsolete packs \(removed.sorted().joined(separator: ", "))") }
        }
        return report
    }

    /// A `languageChange` request: the extension's `downloads(for:)` with it, then the localized
    /// packs reconciled with the preferred languages (those of the new language made available,
    /// those of others that reconciling had downloaded removed).
    func reconcileLanguages(_ event: AgentStore.Event, into report: inout EventReport) async throws {
        if try await runExtensionDownloads(event, into: &report) {
            try store.holdUntilTomorrow(event.seq, now: clock.now)
            throw Deferral(reason: "the extension's daily budget is used up; the language change runs when it renews")
        }
        try waitForNetwork(metered: !configuration.prefetchRequiresUnmetered)
        let before = Set(try ClientContainer(path: containerPath).installed().map(\.id))
        do {
            // Each pack as the agent fetches a prefetch pack: the allowance and hosts before the
            // first launch, unmetered if so configured, stopped with the agent or the network.
            try await manager.reconcilePreferredLanguages { pack in
                if let refusal = try self.refusalBeforeFirstLaunch(pack, essential: false) {
                    throw BacklotError(.invalidInput, refusal, context: pack.id)
                }
                try await self.fetch(pack, unmeteredOnly: self.configuration.prefetchRequiresUnmetered)
            }
        } catch let e as AssetPackManager.LocalAvailabilityError {
            // Waiting for the network or a stop, or an error that may pass: the event stays queued.
            if let passing = e.failures.values.first(where: Self.mayPass) {
                throw Deferral(reason: "the language change waits: \(passing)")
            }
            for (pack, failure) in e.failures.sorted(by: { $0.key.id < $1.key.id }) {
                report.refused.append("\(pack.id): \(failure)")
            }
        }
        let after = Set(try ClientContainer(path: containerPath).installed().map(\.id))
        report.packs = after.subtracting(before).sorted()
        let removed = before.subtracting(after).sorted()
        if !removed.isEmpty { log("languageChange: removed the localized packs \(removed.joined(separator: ", "))") }
    }

    /// Whether an error of a pack's download may pass by itself (the event is tried again): a
    /// deferral (network, stop), a cancellation, an I/O error.
    static func mayPass(_ error: any Error) -> Bool {
        if error is Deferral || error is CancellationError { return true }
        if let e = error as? BacklotError { return e.code == .io || e.code == .cancelled }
        return false
    }

    /// The extension's `downloads(for:)`, once per event, with scheduling blocked while it runs.
    /// - Returns: true when it could not run because the daily budget is used up (the event waits).
    func runExtensionDownloads(_ event: AgentStore.Event, into report: inout EventReport) async throws -> Bool {
        guard let runner = extensionRunner, !event.extensionDone else { return false }
        if !event.bypassBudget && runner.remainingBudget() < 1 { return true }
        let (folder, name, manifest) = try writeManifestCopy()
        defer { folder.removeTree(name) }
        let info = AppExtensionInfo(
            restrictedDownloadSizeRemaining: downloads.remainingAllowance(essential: false),
            restrictedEssentialDownloadSizeRemaining: downloads.remainingAllowance(essential: true))
        let returned: [URLDownload]
        do {
            let call = ExtensionCall.downloads(event.request, manifestPath: manifest, info)
            let bypass = event.bypassBudget
            let seq = event.seq
            let downloads = self.downloads
            returned = try await BlockingPool.shared.run {
                try downloads.blockingScheduling { try runner.call(call, bypassBudget: bypass, event: seq).downloads }
            }
        } catch let e as BacklotError where e.code == .budgetExhausted {
            return true
        } catch let e as BacklotError where e.code == .cancelled {
            throw Deferral(reason: "stopping")
        } catch is CancellationError {
            throw Deferral(reason: "stopping")  // cancelled before the call started
        } catch {
            report.extensionFailures.append("downloads(for:): \(error)")
            try store.markExtensionDone(event.seq)
            return false
        }
        var essential: [String] = []
        for d in returned {
            if !event.request.allowsEssentialDownloads && d.isEssential {
                report.refused.append(
                    "\(d.identifier): a \(event.request.name) request may only return non-essential downloads")
                continue
            }
            if configuration.scheduler.isAppClip && d.isEssential {
                report.refused.append(
                    "\(d.identifier): \(BackgroundDownloadError.essentialDownloadNotPermitted(d.identifier))")
                continue
            }
            do {
                try downloads.scheduleDownload(d)
                report.scheduled.append(d.identifier)
                if d.isEssential { essential.append(d.identifier) }
            } catch {
                report.refused.append("\(d.identifier): \(error)")
            }
        }
        try store.setEssentialDownloads(event.seq, essential)
        try store.markExtensionDone(event.seq)
        return false
    }

    /// The end of the essential phase: waits until the essential URL downloads the extension
    /// returned for the event have ended (finished or failed), running them meanwhile.
    /// - Throws: a ``Deferral`` when the network goes away or the agent stops (the event goes on later).
    func waitForEssentialDownloads(_ event: AgentStore.Event) async throws {
        let ids = Set(try store.essentialDownloads(event.seq))
        guard !ids.isEmpty else { return }
        while try downloads.fetchCurrentDownloads().contains(where: { ids.contains($0.identifier) }) {
            if isStopping { throw Deferral(reason: "stopping") }
            try waitForNetwork(metered: true)
            downloads.resumeScheduled()
            try? await Task.sleep(nanoseconds: 50_000_000)
        }
    }

    /// A read-only copy of the verified catalog for the extension (deleted after the call), its
    /// archive URLs made absolute (the catalog's are relative to where it was fetched from, which
    /// the copy's place is not): what ``AssetPackManifest/allDownloads(for:)`` downloads.
    /// - Returns: the folder it is in, its name there (to remove it through the folder) and its
    ///   path (for the extension).
    func writeManifestCopy() throws -> (folder: DirectoryHandle, name: String, path: String) {
        let container = try ClientContainer(path: containerPath)
        guard var catalog = try container.lastVerifiedCatalog() else {
            throw BacklotError(.untrusted, "no verified catalog to give the extension", context: containerPath)
        }
        // Checked as an install checks them: a URL that leaves the published tree stays as the
        // catalog wrote it (relative), which the extension's AssetPackManifest gives no download.
        let manager = self.manager
        func absolute(_ release: Catalog.Release) -> String {
            (try? manager.archiveURL(of: release).absoluteString) ?? release.archiveURL
        }
        catalog.packs = catalog.packs.map { entry in
            var entry = entry
            entry.release.archiveURL = absolute(entry.release)
            if let candidate = entry.candidate { entry.candidate?.archiveURL = absolute(candidate) }
            return entry
        }
        // Created new (never through a link put in its place) and made read-only through its own
        // descriptor; removed through the folder's.
        let folder = try ContainerLayout(root: containerPath).openExtensionCallsFolder()
        let name = "manifest-\(UUID().uuidString.lowercased()).json"
        let path = try folder.createFile(name, contents: Array(catalog.json.prettyPrinted().utf8), mode: 0o444)
        return (folder, name, path)
    }

    /// Throws a ``Deferral`` while the network is unavailable (or metered, when `metered` is false).
    func waitForNetwork(metered: Bool) throws {
        let c = conditions.current()
        if !c.networkAvailable { throw Deferral(reason: "no network") }
        if !metered && c.networkMetered {
            throw Deferral(reason: "the network is metered; prefetch downloads wait for an unmetered one")
        }
    }

    /// Before the app's first launch, why a pack may not be fetched now, or nil: its archive's
    /// host must be on the allow list, and its download size (the most an install transfers; a
    /// delta transfers less) must fit in what is left of the allowance of its kind (essential packs:
    /// `BAEssentialDownloadAllowance`, prefetch packs: `BADownloadAllowance`).
    func refusalBeforeFirstLaunch(_ pack: AssetPack, essential: Bool) throws -> String? {
        // launched, or unrestricted
        guard downloads.remainingAllowance(essential: essential) != nil else { return nil }
        do {
            let catalogURL = manager.configuration.catalogURL
            if let catalog = try ClientContainer(path: containerPath).lastVerifiedCatalog(),
                let entry = catalog.packs.first(where: { $0.id.rawValue == pack.id }),
                let archive = URL(
                    string: entry.release(forDevice: manager.deviceID).archiveURL, relativeTo: catalogURL)?.absoluteURL
            {
                try downloads.checkHostBeforeFirstLaunch(archive)
            }
            try downloads.checkAllowance(bytes: UInt64(max(0, pack.downloadSize)), essential: essential)
            return nil
        } catch let e as BackgroundDownloadError {
            return "\(pack.id): \(e) (Apple's \(e.code == 202 ? 202 : 203) before the first launch)"
        }
    }

    /// Installs a pack, cancelling (chunks kept) when the network goes away or the agent stops;
    /// the bytes it downloaded (and the catalog it fetched) count against the allowance before the first launch.
    func fetch(_ pack: AssetPack, unmeteredOnly: Bool, essential: Bool = false) async throws {
        try waitForNetwork(metered: !unmeteredOnly)
        if isStopping { throw Deferral(reason: "stopping") }
        let updates = manager.statusUpdates(forAssetPackWithID: pack.id)
        let watcher = Task { [weak self] in
            for await update in updates {
                guard let self else { return }
                if case .downloading(_, let progress) = update {
                    self.state.withLock { $0.progresses[pack.id] = ProgressBox(progress) }
                    while !progress.isFinished && !progress.isCancelled && !Task.isCancelled {
                        let c = self.conditions.current()
                        if self.isStopping || !c.networkAvailable || (unmeteredOnly && c.networkMetered) {
                            progress.cancel()
                            break
                        }
                        try? await Task.sleep(nanoseconds: 50_000_000)
                    }
                }
            }
        }
        defer {
            watcher.cancel()
            state.withLock { _ = $0.progresses.removeValue(forKey: pack.id) }
        }
        do {
            let r = try await manager.fetch(packWithID: pack.id)
            log("pack \(pack.id): version \(r.version), \(r.downloadedBytes) bytes downloaded")
            try downloads.countTowardsAllowance(bytes: r.downloadedBytes, essential: essential)
            try downloads.countCatalogFetch()
        } catch let e as BacklotError where e.code == .cancelled {
            if isStopping { throw Deferral(reason: "stopping; verified chunks are kept") }
            try waitForNetwork(metered: !unmeteredOnly)
            throw e
        }
    }
}
