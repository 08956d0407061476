import CBacklot

// backlot_subscribe, backlot_unsubscribe: Apple's statusUpdates, as callbacks.

@_cdecl("backlot_subscribe")
public func backlotSubscribe(
    _ handle: OpaquePointer?, _ packID: UnsafePointer<CChar>?, _ callback: backlot_status_fn?,
    _ context: UnsafeMutableRawPointer?, _ out: UnsafeMutablePointer<UInt64>?
) -> backlot_status {
    out?.pointee = 0
    return cCall {
        let m = try manager(handle)
        let id = try CMemory.optionalString(packID, "pack_id")
        guard let callback else { throw CallError.invalidArgument("callback is NULL") }
        let target = try output(out, "out")
        let subscription = CSubscription(
            manager: m.manager, packID: id, callback: callback, context: CContext(pointer: context))
        let number = m.subscriptions.withLock { s in
            let number = s.next
            s.next += 1
            s.open[number] = subscription
            return number
        }
        if m.isClosed {
            // Closed meanwhile: close may have ended the open subscriptions before this one was added.
            _ = m.subscriptions.withLock { $0.open.removeValue(forKey: number) }
            subscription.end()
            throw CallError.closedHandle
        }
        target.pointee = number
    }
}

@_cdecl("backlot_unsubscribe")
public func backlotUnsubscribe(_ handle: OpaquePointer?, _ subscription: UInt64) -> backlot_status {
    cCall {
        let m = try manager(handle)
        guard let s = m.subscriptions.withLock({ $0.open.removeValue(forKey: subscription) }) else {
            throw CallError.invalidArgument("no subscription \(subscription) is open on this manager")
        }
        s.end()
    }
}
