import StarlingWire

/// Pure flooding: every node relays every new packet once, after a short
/// jitter. The baseline every other policy is measured against.
public struct FloodingPolicy: RelayPolicy {
    public var jitter: Millis
    public init(jitter: Millis = 20) { self.jitter = jitter }
    public var name: String { "flooding" }

    public func firstHeard(_ context: RelayContext, neighborhood: Neighborhood, tracking: inout RelayTracking,
                           rng: inout SeededGenerator) -> RelayDecision {
        guard let ttl = relayTTL(context.ttl) else { return .drop }
        return .relay(delay: uniform(jitter, &rng), ttl: ttl, links: .allButIncoming)
    }
}
