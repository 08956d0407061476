extension Duration {
    /// The duration in seconds, as a `Double` (what rates and reports are computed from).
    ///
    /// ```swift
    /// let started = ContinuousClock.now
    /// work()
    /// print((ContinuousClock.now - started).inSeconds)
    /// ```
    public var inSeconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
