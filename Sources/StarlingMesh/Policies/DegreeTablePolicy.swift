import StarlingWire

/// Seed 001's relay controller: relay with a probability that falls with the
/// node's degree (0–2 links 100%, 3–4 90%, 5–6 70%, 7+ 45%), after a jitter of
/// 10–100 ms; a copy heard before the relay fires cancels it.
public struct DegreeTablePolicy: RelayPolicy {
    public init() {}
    public var name: String { "degree-table" }

    public static func probability(degree: Int) -> Double {
        switch degree {
        case ...2: 1.0
        case 3...4: 0.9
        case 5...6: 0.7
        default: 0.45
        }
    }

    public func firstHeard(_ context: RelayContext, neighborhood: Neighborhood, tracking: inout RelayTracking,
                           rng: inout SeededGenerator) -> RelayDecision {
        guard let ttl = relayTTL(context.ttl) else { return .drop }
        guard rng.unit() < Self.probability(degree: neighborhood.degree) else { return .drop }
        return .relay(delay: 10 + uniform(90, &rng), ttl: ttl, links: .allButIncoming)
    }

    public func duplicateHeard(from peer: PeerID?, neighborhood: Neighborhood, tracking: inout RelayTracking) -> Bool {
        tracking.heard += 1
        return true
    }
}
