import StarlingWire

/// Neighbour-coverage relaying with 2-hop knowledge.
///
/// A transmission by `u` reaches `u`'s neighbours. On the first copy a node
/// works out which of its own neighbours that transmission did not reach, and
/// relays only if some remain; every copy heard before the relay fires covers
/// more of them, and the relay is cancelled when none remain.
///
/// - `redundancy` 1 is the simple pruning (one covering transmission per
///   neighbour is assumed enough).
/// - `redundancy` 2 (Starling's default) asks each neighbour to be covered by
///   two transmissions, or to have transmitted the packet itself: with 5% loss
///   per reception a neighbour then misses a packet with probability about
///   0.25% instead of 5%, which is what keeps pruned flooding from dying out.
///   The relay delay falls as the uncovered weight grows, so the nodes that
///   cover most go first (a distributed greedy cover), and the rest mostly
///   cancel.
public struct CoveragePolicy: RelayPolicy {
    public var redundancy: Int
    /// The delay for a node that covers a single neighbour; a node covering w
    /// units waits about `slot / w`, plus jitter.
    public var slot: Millis
    public var jitter: Millis

    /// The shortest delay, so that nodes covering the most still hear each other.
    public var base: Millis

    public init(redundancy: Int = 2, base: Millis = 8, slot: Millis = 120, jitter: Millis = 8) {
        self.redundancy = redundancy
        self.base = base
        self.slot = slot
        self.jitter = jitter
    }

    public var name: String { redundancy == 1 ? "coverage" : "coverage-\(redundancy)" }

    public func firstHeard(_ context: RelayContext, neighborhood: Neighborhood, tracking: inout RelayTracking,
                           rng: inout SeededGenerator) -> RelayDecision {
        guard let ttl = relayTTL(context.ttl) else { return .drop }
        // Without knowledge of the neighbourhood, relay like flooding.
        guard let from = context.fromPeer, let theirs = neighborhood.neighbors(of: from) else {
            return .relay(delay: uniform(jitter + slot / 4, &rng), ttl: ttl, links: .allButIncoming)
        }
        tracking.expect(neighborhood.neighborPeers, times: redundancy, except: from)
        tracking.heard(from, reaching: theirs)
        let weight = tracking.uncoveredWeight
        guard weight > 0 else { return .drop }
        return .relay(delay: base + slot / Millis(weight) + uniform(jitter, &rng), ttl: ttl, links: .allButIncoming)
    }

    public func duplicateHeard(from peer: PeerID?, neighborhood: Neighborhood, tracking: inout RelayTracking) -> Bool {
        tracking.heard += 1
        guard let peer else { return false }
        tracking.heard(peer, reaching: neighborhood.neighbors(of: peer))
        return tracking.uncoveredWeight == 0
    }
}
