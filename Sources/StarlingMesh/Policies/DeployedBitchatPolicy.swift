import StarlingWire

/// What the deployed bitchat apps do (decisions file): relay always, with a
/// jitter that grows with the degree; at 6 or more links the TTL is clamped to
/// 5 and the packet goes to a subset of the links; never back out the link it
/// came in on.
public struct DeployedBitchatPolicy: RelayPolicy {
    public init() {}
    public var name: String { "bitchat" }

    public func firstHeard(_ context: RelayContext, neighborhood: Neighborhood, tracking: inout RelayTracking,
                           rng: inout SeededGenerator) -> RelayDecision {
        guard var ttl = relayTTL(context.ttl) else { return .drop }
        let dense = neighborhood.degree >= 6
        if dense { ttl = min(ttl, 5) }
        let delay = uniform(10 + 10 * Millis(neighborhood.degree), &rng)
        return .relay(delay: delay, ttl: ttl, links: dense ? .randomSubset(count: max(3, neighborhood.degree / 2)) : .allButIncoming)
    }
}
