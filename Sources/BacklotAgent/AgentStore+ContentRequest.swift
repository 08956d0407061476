import BacklotContainer
import BacklotExtension

/// The agent's events carry the extension protocol's ``ContentRequest``.
extension AgentStore {
    /// Queues an event for `request`; returns its number (a running agent is woken and runs it).
    @discardableResult
    public func enqueue(_ request: ContentRequest, bypassBudget: Bool) throws -> Int64 {
        try enqueue(requestNamed: request.name, bypassBudget: bypassBudget)
    }
}

extension AgentStore.Event {
    /// The event's content request. The store returns only events whose name is one of
    /// ``AgentStore/requestNames``, which are ``ContentRequest``'s names (AgentStoreTests keeps them equal).
    public var request: ContentRequest { ContentRequest(name: requestName) ?? .periodic }
}
