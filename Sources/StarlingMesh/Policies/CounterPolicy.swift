import StarlingWire

/// Counter-based suppression (cancel-if-heard): schedule every relay after a
/// random assessment delay and cancel it once the packet was heard `threshold`
/// times in all.
public struct CounterPolicy: RelayPolicy {
    public var threshold: Int
    public var maxDelay: Millis
    public init(threshold: Int = 3, maxDelay: Millis = 50) {
        self.threshold = threshold
        self.maxDelay = maxDelay
    }
    public var name: String { "counter-\(threshold)" }

    public func firstHeard(_ context: RelayContext, neighborhood: Neighborhood, tracking: inout RelayTracking,
                           rng: inout SeededGenerator) -> RelayDecision {
        guard let ttl = relayTTL(context.ttl) else { return .drop }
        return .relay(delay: uniform(maxDelay, &rng), ttl: ttl, links: .allButIncoming)
    }

    public func duplicateHeard(from peer: PeerID?, neighborhood: Neighborhood, tracking: inout RelayTracking) -> Bool {
        tracking.heard += 1
        return tracking.heard >= threshold
    }
}
