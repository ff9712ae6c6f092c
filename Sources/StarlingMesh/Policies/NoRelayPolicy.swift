import StarlingWire

/// Never relays: the node sends and receives only. A user may opt out of
/// relaying, and a phone's system may keep an app from it; the simulator mixes
/// such nodes into a mesh to measure what they cost each policy, since planned
/// policies cannot tell them from relays that lost a packet.
public struct NoRelayPolicy: RelayPolicy {
    public init() {}
    public var name: String { "no-relay" }

    public func firstHeard(_ context: RelayContext, neighborhood: Neighborhood, tracking: inout RelayTracking,
                           rng: inout SeededGenerator) -> RelayDecision { .drop }
}
